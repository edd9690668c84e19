#!/usr/bin/env bash
# Checks the README's promise on a fresh Debian 12: in a minimal Debian 12 root made by
# debootstrap (none of the packages this machine has installed), a clean clone of this
# repository's HEAD runs `bash scripts/test.sh` and then `bash scripts/demo.sh`. It is what CI
# cannot show: CI clones into a machine that already has every package, so a package missing
# from scripts/setup-deps.sh's list would go unnoticed there.
#
#   sudo bash scripts/check-fresh-debian12.sh [ROOT] [test|demo|both]
#
# ROOT (default /srv/denox-fresh-debian12) is made anew, so it must not exist or be a root this
# script made (it is deleted first). Needs root (debootstrap, chroot, bind mounts) and Debian's
# archive. Logs go to ROOT.log.d/{debootstrap,test,demo}.log; the exit status is the first
# failing step's. Takes about an hour on 2 cores (the build and the tests, as in CI, plus ~5
# minutes of debootstrap and apt).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-/srv/denox-fresh-debian12}
what=${2:-both}
case "$what" in test|demo|both) ;; *) echo "usage: $0 [ROOT] [test|demo|both]" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || { echo "$0: needs root (debootstrap, chroot, mount)" >&2; exit 2; }
if [ -e "$root" ] && [ ! -e "$root/.denox-fresh-root" ]; then
  echo "$0: $root exists and was not made by this script; give another ROOT" >&2; exit 2
fi
logs="$root.log.d"
mounts=(proc sys dev dev/pts)

unmount_all() {
  local i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    if mountpoint -q "$root/${mounts[i]}"; then umount "$root/${mounts[i]}"; fi
  done
}
trap unmount_all EXIT

if [ -e "$root" ]; then unmount_all; rm -rf --one-file-system "$root"; fi
rm -rf "$logs"; mkdir -p "$logs"
command -v debootstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq debootstrap; }

echo "debootstrap bookworm (minbase) into $root"
debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian > "$logs/debootstrap.log" 2>&1
touch "$root/.denox-fresh-root"
# A Debian 12 installation's sources: the release, its updates and security (debootstrap writes
# only the first).
rm -f "$root/etc/apt/sources.list"
cat > "$root/etc/apt/sources.list.d/debian.sources" <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
cp /etc/resolv.conf "$root/etc/resolv.conf"
for m in "${mounts[@]}"; do mount --bind "/$m" "$root/$m"; done
# The clean clone: what is committed at HEAD, nothing of this checkout's builds or .deps.
git clone -q "$repo" "$root/root/denox"
echo "clone at $(git -C "$root/root/denox" log --oneline -1)"

run_in_root() {  # $1: step name (log), $2: command run in the clone inside the root
  local start=$SECONDS rc=0
  chroot "$root" env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb \
    bash -c "cd /root/denox && $2" > "$logs/$1.log" 2>&1 || rc=$?
  echo "$1: rc=$rc after $((SECONDS - start)) s ($logs/$1.log)"
  return "$rc"
}
if [ "$what" != demo ]; then run_in_root test "bash scripts/test.sh"; fi
if [ "$what" != test ]; then run_in_root demo "bash scripts/demo.sh"; fi

# Sourced by the bench scripts that run int8: the calibration set they all use, 8 random 256x256
# images (seeds 1-8) made with `denox make-image`.
#   calibration_images DIR   fills the array calib_args with "-i DIR/calibN.pfm" pairs (returns 1
#                            if an image could not be made)
calibration_images() {
  calib_args=()
  local i
  for i in 1 2 3 4 5 6 7 8; do
    denox make-image "$1/calib$i.pfm" --size 256x256 --seed "$i" >/dev/null || { echo "calibration_images: make-image failed" >&2; calib_args=(); return 1; }
    calib_args+=(-i "$1/calib$i.pfm")
  done
}

// The crash journal of measuring (issue 5): markers in the measurement store that survive a
// process that died while measuring an edge, so that the next process does not crash on it
// again. denox runs inside a game engine, on the engine's VkDevice, so measuring cannot move to
// a child process; a driver that segfaults in vkCreateComputePipelines, a shader compiler that
// aborts or a device loss that kills the process can only be remembered, not contained.
//
// Before each risky step of an edge (its shader compile, its driver pipeline creation, its
// timing) the edge's row in the `measurements` table is set to a marker
//
//   running pid=<pid> boot=<boot id> start=<start ticks> phase=<compile|pipeline|time> mode=<parallel|serial|retry> at=<unix time> ns=<pid namespace>
//
// and afterwards to the result ("ok <ms>" / "failed <why>", measure::encode_measurement) or,
// when the edge is not finished yet or the run stops early (cancelled, an exception), to the
// neutral "unmeasured" ("unmeasured serial" for an edge that must be retried one at a time).
// SQLite's WAL is written with write() at each commit, so a marker is in the file (the OS
// page cache) before the step starts, whatever happens to the process afterwards. The cache
// runs synchronous=NORMAL (FULL on a network file system, where every commit is synced), so
// the page cache reaches the disk later; a machine that freezes or
// panics before that would lose the marker, and the edge would hang it again at the next tune.
// Only the timing step runs the edge on the GPU, the step that can take the whole machine
// down, so its marker is committed synced (PlanCache::Durability::Synced): one fsync per timed
// edge, which also puts every earlier row on the disk.
//
// What a later process concludes from a row that is not a result (judge_row):
// - a marker whose process is alive: someone measures the edge right now (another process on
//   the same cache, or another model of this process tuning at the same time): it is measured
//   here too, as without the journal (the results agree; last one written wins);
// - a marker whose process is dead, of a parallel step (shaders compiled, or driver pipelines
//   created, on several threads): the crash cannot be blamed on one edge, so every edge whose
//   marker says so is measured again one at a time (serial compile, pipeline creation and
//   timing, each with its own "retry" marker);
// - a marker whose process is dead, of a serial step (only this edge was in flight): the edge
//   may have killed that process, or the process may have ended for another reason (a game that
//   calls exit() while it tunes in the background, its own crash, the OS killing it). One death
//   is not enough to blame the edge: it is measured alone again, under "retry" markers;
// - a marker whose process is dead, of a retry step: a second death with this edge alone in
//   flight. It is recorded as "failed crashed the process while being measured (<phase>)" and
//   never tried again on this device and driver (until the cache is cleared);
// - "unmeasured serial": measured one at a time; anything else: measured as usual.
//
// Liveness (process_alive): a process is the triple (pid, boot id, start time in clock ticks
// since boot, /proc/<pid>/stat field 22). It is dead when the boot id differs and the marker
// names this machine (rebooted since, possibly by the crash itself), when kill(pid, 0) fails
// with ESRCH, or when the pid belongs to a process that started at another time (the pid was
// reused). A marker naming another machine (a cache in a home directory on a network mount
// that several hosts use) is judged by its liveness lock, below, as the kernel boot id tells
// nothing there. Where this cannot be told (no /proc, hidepid), the process counts as alive: a
// live process is never blamed.
// Pids only mean something inside one PID namespace: two containers sharing a cache directory
// (and the kernel's boot id) see each other's pids as free or as unrelated processes. A marker
// therefore names its namespace (the inode of /proc/self/ns/pid) and the slot of the liveness
// lock its process holds while measuring (cache/liveness_lock.hpp: a byte of `<cache>.lock`
// that the kernel unlocks when the process dies, seen from any namespace). A marker from another
// namespace is judged by that lock: held, alive; free, dead; the judging journal's own slot
// (a slot is reused once free), dead. Without a slot (no lock file, or a file system without
// such locks) it counts as alive, so its edge is measured again and never blamed. Markers of
// older denox versions lack these fields (and the machine's) and are judged as before.
//
// Known limits: a process that ends for another reason twice in a row while the same edge is
// measured alone (killed from outside, exit() during a background tune) blames that edge as a
// crash; `denox cache clear` forgets it. A network mount whose locks stay local to each client
// (NFS `nolock` or `local_lock=all`, SMB `nobrl`) shows another host's slot free: its live
// process counts as dead, as every other-boot marker did before 0.4.2. Machine ids come only
// from /etc/machine-id and D-Bus's. Where the marker's or the judging machine's is unknown
// (minimal containers and chroots have none), another boot id is judged by the marker's lock
// slot, as another machine's is (a reboot freed it), and as a reboot only without one. So are
// the markers of two containers of different images on one machine from before a reboot. A slot
// reused since by a live process reads as alive: the edge is measured again. Two processes measuring one edge at once overwrite each other's markers, so a
// crash of one of them may go unrecorded until it happens again. Without a writable cache
// (`disable_cache`, or none could be opened) nothing is journalled.
//
// Test hook: DENOX_TEST_CRASH_MEASURING=<phase>:<text> (phase compile, pipeline or time) makes
// the measurer abort the process (std::abort) right after writing the marker of that phase for
// an edge whose description ("<name> [<family> <config>]") contains <text>, in the parallel and
// in the serial form of the phase. It is compiled in always, costs one getenv per measure()
// call, and is meant for tests/api/cli_measure_crash_test.py only.
#pragma once

#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/cache/liveness_lock.hpp"

namespace denox::cache {
class LayeredCache;
}

namespace denox::measure {

// A process as markers name it (see the header comment).
struct ProcessStamp {
  long pid = 0;
  std::string boot;              // /proc/sys/kernel/random/boot_id; empty where unknown
  unsigned long long start = 0;  // start time in clock ticks since boot; 0 where unknown
  std::string pid_namespace;     // "pid:[<inode>]" of /proc/<pid>/ns/pid; empty where unknown
  int liveness_slot = -1;        // the cache::LivenessLock slot it holds while measuring; -1: none
  std::string host;              // the machine: /etc/machine-id (or D-Bus's); empty where neither exists
  static ProcessStamp self();
  // The stamp of a running process `pid` (its boot id is this machine's); nullopt when no such
  // process can be read.
  static std::optional<ProcessStamp> of(long pid);
};

// False only where the process is known to be gone (see the header comment).
// `database`: the cache whose lock file holds the liveness slots (empty: slots are not read).
// `own_slot`: the slot the asking process holds (-1: none): a marker naming it is another
// process's, which cannot hold it any more.
bool process_alive(const ProcessStamp& p, const std::filesystem::path& database = {}, int own_slot = -1);

// One risky step of one edge in flight.
struct Marker {
  ProcessStamp owner;
  std::string phase;      // compile, pipeline, time
  bool parallel = false;  // other edges were in flight at the same time
  long long at = 0;       // unix time it was written
  bool retry = false;     // (serial) measured alone again, a process having died with it in flight before
};

std::string encode_marker(const Marker& m);
std::optional<Marker> decode_marker(std::string_view text);

// The neutral value: no result, measure again (one at a time when `serial`).
std::string encode_unmeasured(bool serial);
// The serial flag of a neutral value; nullopt for any other text.
std::optional<bool> decode_unmeasured(std::string_view text);

// What to do with an edge whose stored row is not a result.
struct Judgement {
  enum class Verdict { Measure, MeasureSerially, Crashed } verdict = Verdict::Measure;
  std::string failure;  // Crashed: the failure to record
};
// Judges `text` (the stored row of the edge described by `what`) and logs what it concluded
// (log::warn for a dead process's marker).
Judgement judge_row(std::string_view text, const std::string& what, const std::filesystem::path& database = {}, int own_slot = -1);

// The markers one measure() call writes to `store`'s writable cache. Thread-safe. A null store,
// or one without a writable cache, journals nothing.
class CrashJournal {
 public:
  enum class Step {
    Parallel,  // other edges are in flight too
    Serial,    // only this edge is in flight
    Retry,     // only this edge, which a dead process left in flight (in any step)
  };

  explicit CrashJournal(cache::LayeredCache* store);
  // The cache file whose lock file holds the liveness slots; empty when nothing is journalled.
  const std::filesystem::path& database() const { return database_; }
  // The liveness slot this journal holds (-1: none), for judge_row.
  int liveness_slot() const { return liveness_.slot(); }
  // Every marker still standing is replaced by the neutral value: a run that stops early
  // (cancelled, an exception) leaves nothing that a later run would take for a crash.
  ~CrashJournal();
  CrashJournal(const CrashJournal&) = delete;
  CrashJournal& operator=(const CrashJournal&) = delete;

  bool enabled() const { return store_ != nullptr; }

  // Before `phase` of the edge `key`. Parallel steps of one key nest (an edge whose two
  // pipelines are created on two threads): the marker is written by the first and cleared by
  // the last end(). A serial step replaces the key's marker.
  void begin(const std::string& key, const char* phase, Step step);
  // After a step: once no step of the key is in flight, the marker becomes the neutral value.
  void end(const std::string& key);
  // The edge's result: replaces its marker. False when it could not be stored.
  bool finish(const std::string& key, const std::string& result);

 private:
  struct Open {
    int depth = 0;
    bool retry = false;
  };
  bool write(const std::string& key, const std::string& value, bool synced = false);

  cache::LayeredCache* store_;
  std::filesystem::path database_;
  cache::LivenessLock liveness_;  // held while this journal exists; its slot is in self_
  ProcessStamp self_;
  std::mutex mutex_;
  std::map<std::string, Open> open_;
};

// DENOX_TEST_CRASH_MEASURING (see the header comment).
class CrashHook {
 public:
  static CrashHook from_environment();
  // Aborts the process when the hook names `phase` and `what`.
  void at(const char* phase, bool parallel, const std::string& what) const;

 private:
  std::string phase_, text_;
};

}  // namespace denox::measure

// The crash journal of measuring (src/runtime/measure/crash_journal.hpp) without a device:
// marker texts, which processes count as dead (exited, zombie, pid reused, rebooted), what a
// later run concludes from a row, and the markers one journal leaves in a real cache file.
// tests/api/cli_measure_crash_test.py crashes real `denox compile` processes.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <string>

#include <sqlite3.h>

#include "cache_test_util.hpp"
#include "wal_sync_counter.hpp"
#include "runtime/cache/layered_cache.hpp"
#include "runtime/cache/liveness_lock.hpp"
#include "runtime/measure/crash_journal.hpp"

using namespace denox::cache;
using namespace denox::cache::test;
using namespace denox::measure;
using Verdict = Judgement::Verdict;

namespace {

// A child that exits at once; reaped (gone) or left a zombie.
long exited_child(bool reap) {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) _exit(0);
  if (reap) {
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
  } else {
    // Wait until it has exited (a zombie) without reaping it.
    siginfo_t info{};
    REQUIRE(waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) == 0);
  }
  return pid;
}

void reap(long pid) {
  int status = 0;
  waitpid(static_cast<pid_t>(pid), &status, 0);
}

// The first word of the first of `files` that has one; empty where none has.
std::string first_token_of_any(std::initializer_list<const char*> files) {
  for (const char* file : files) {
    std::ifstream f(file);
    std::string word;
    if (f >> word) return word;
  }
  return {};
}

Marker marker_of(const ProcessStamp& owner, const char* phase, bool parallel, bool retry = false) {
  return Marker{owner, phase, parallel, 1700000000, retry};
}

}  // namespace

TEST_CASE("crash journal: markers and neutral rows round-trip, results are neither", "[cache][journal]") {
  const ProcessStamp self = ProcessStamp::self();
  CHECK(self.pid == static_cast<long>(getpid()));
  CHECK(!self.boot.empty());  // Linux: /proc/sys/kernel/random/boot_id
  CHECK(self.start > 0);
  CHECK(self.pid_namespace.rfind("pid:[", 0) == 0);  // Linux: /proc/self/ns/pid
  // The machine id where this machine has one (a minimal container or chroot has none).
  CHECK(self.host == first_token_of_any({"/etc/machine-id", "/var/lib/dbus/machine-id"}));
  CHECK(self.host.find(' ') == std::string::npos);
  for (const auto& [parallel, retry] : {std::pair{false, false}, std::pair{true, false}, std::pair{false, true}}) {
    const std::string text = encode_marker(marker_of(self, "pipeline", parallel, retry));
    CHECK(text.rfind("running pid=", 0) == 0);
    const auto m = decode_marker(text);
    REQUIRE(m);
    CHECK(m->owner.pid == self.pid);
    CHECK(m->owner.boot == self.boot);
    CHECK(m->owner.start == self.start);
    CHECK(m->owner.pid_namespace == self.pid_namespace);
    CHECK(m->owner.host == self.host);
    CHECK(m->phase == "pipeline");
    CHECK(m->parallel == parallel);
    CHECK(m->retry == retry);
    CHECK(m->at == 1700000000);
  }
  // Markers of earlier versions name no namespace.
  const auto older = decode_marker("running pid=12 boot=b start=3 phase=time mode=serial at=5");
  REQUIRE(older);
  CHECK(older->owner.pid_namespace.empty());
  CHECK(older->owner.host.empty());
  CHECK(older->owner.start == 3);
  CHECK(decode_unmeasured(encode_unmeasured(false)) == false);
  CHECK(decode_unmeasured(encode_unmeasured(true)) == true);
  for (const char* other : {"ok 0.5", "failed shader compilation: x", "running", "running pid=x phase=time mode=serial",
                            "running pid=12 mode=serial", "unmeasured!", ""}) {
    INFO(other);
    CHECK(!decode_marker(other));
    CHECK(!decode_unmeasured(other));
  }
}

TEST_CASE("crash journal: which processes count as dead", "[cache][journal]") {
  const ProcessStamp self = ProcessStamp::self();
  CHECK(process_alive(self));
  CHECK(ProcessStamp::of(self.pid)->start == self.start);

  SECTION("exited and reaped") {
    const long pid = exited_child(true);
    CHECK(!ProcessStamp::of(pid));
    CHECK(!process_alive(ProcessStamp{pid, self.boot, 1}));
  }
  SECTION("exited, not reaped yet (a zombie: kill(pid, 0) still succeeds)") {
    const long pid = exited_child(false);
    CHECK(::kill(static_cast<pid_t>(pid), 0) == 0);
    CHECK(!process_alive(ProcessStamp{pid, self.boot, ProcessStamp::of(pid) ? ProcessStamp::of(pid)->start : 1}));
    reap(pid);
  }
  SECTION("the pid now belongs to a process that started at another time") {
    ProcessStamp reused = self;
    reused.start = self.start - 1;
    CHECK(!process_alive(reused));
  }
  SECTION("written before the last boot") {
    ProcessStamp before = self;
    before.boot = "00000000-0000-0000-0000-000000000000";
    CHECK(!process_alive(before));
  }
  SECTION("not a process id") {
    CHECK(!process_alive(ProcessStamp{0, self.boot, 1}));
    CHECK(!process_alive(ProcessStamp{-1, self.boot, 1}));
  }
  SECTION("unknown start time or boot: alive while the pid is") {
    CHECK(process_alive(ProcessStamp{self.pid, "", 0}));
  }
  SECTION("another PID namespace (another container on a shared cache): never dead") {
    const long pid = exited_child(true);
    CHECK(!process_alive(ProcessStamp{pid, self.boot, 1, self.pid_namespace}));
    CHECK(process_alive(ProcessStamp{pid, self.boot, 1, "pid:[1]"}));
    // The boot id still tells a marker from before a reboot, whatever its namespace.
    CHECK(!process_alive(ProcessStamp{pid, "00000000-0000-0000-0000-000000000000", 1, "pid:[1]"}));
  }
  SECTION("another machine (a cache on a network mount): judged by its liveness lock, never by the boot id") {
    TempDir dir;
    const fs::path db = dir / "cache.sqlite3";
    const std::string other_boot = "00000000-0000-0000-0000-000000000000";
    ProcessStamp remote{self.pid, other_boot, 1, "pid:[1]", -1, "another-machine"};
    CHECK(process_alive(remote, db));  // no slot: cannot be told dead
    const LivenessLock theirs = LivenessLock::take(db);
    REQUIRE(theirs.slot() >= 0);
    remote.liveness_slot = theirs.slot();
    CHECK(process_alive(remote, db));
    // The slot is free (its holder died) or held by the judging process itself: dead.
    remote.liveness_slot = theirs.slot() + 1;
    CHECK(!process_alive(remote, db));
    remote.liveness_slot = theirs.slot();
    CHECK(!process_alive(remote, db, theirs.slot()));
    // The same machine with another boot id rebooted since, whatever its lock says (where this
    // machine has an id).
    ProcessStamp rebooted = remote;
    if (!self.host.empty()) {
      rebooted.host = self.host;
      CHECK(!process_alive(rebooted, db));
    }
    // A marker that names no machine (made where there is no machine id) is judged by its slot,
    // as another machine's is: a reboot frees it.
    rebooted.host.clear();
    CHECK(process_alive(rebooted, db));
    rebooted.liveness_slot = theirs.slot() + 1;
    CHECK(!process_alive(rebooted, db));
    // Markers of older versions name neither a machine nor a slot: another boot id is a reboot,
    // as before.
    rebooted.liveness_slot = -1;
    CHECK(!process_alive(rebooted, db));
  }
  SECTION("another PID namespace whose slot the judging process holds now: dead") {
    TempDir dir;
    const fs::path db = dir / "cache.sqlite3";
    const LivenessLock mine = LivenessLock::take(db);
    REQUIRE(mine.slot() >= 0);
    const ProcessStamp other{12345, self.boot, 1, "pid:[1]", mine.slot(), self.host};
    CHECK(process_alive(other, db));
    CHECK(!process_alive(other, db, mine.slot()));
  }
}

TEST_CASE("crash journal: what a later run concludes from a row", "[cache][journal]") {
  const ProcessStamp self = ProcessStamp::self();
  const long dead_pid = exited_child(true);
  const ProcessStamp dead{dead_pid, self.boot, 12345};
  LogCapture log;

  // One death with the edge alone in flight: measured alone again (the process may have been
  // quit or killed); a second one, in that retry, blames it.
  CHECK(judge_row(encode_marker(marker_of(dead, "time", false)), "conv0 [conv2d z]").verdict == Verdict::MeasureSerially);
  CHECK(log.text().find("while conv0 [conv2d z] was measured alone (time); measuring it again alone") != std::string::npos);
  CHECK(log.text().find("conv0 [conv2d z] crashed") == std::string::npos);
  auto crashed = judge_row(encode_marker(marker_of(dead, "time", false, true)), "conv1 [conv2d a]");
  CHECK(crashed.verdict == Verdict::Crashed);
  CHECK(crashed.failure == "crashed the process while being measured (time)");
  crashed = judge_row(encode_marker(marker_of(dead, "compile", false, true)), "conv1 [conv2d a]");
  CHECK(crashed.failure == "crashed the process while being measured (compile)");
  CHECK(log.text().find("conv1 [conv2d a] crashed process " + std::to_string(dead_pid)) != std::string::npos);

  CHECK(judge_row(encode_marker(marker_of(dead, "compile", true)), "conv2 [conv2d b]").verdict == Verdict::MeasureSerially);
  CHECK(judge_row(encode_marker(marker_of(dead, "pipeline", true)), "conv2 [conv2d b]").verdict == Verdict::MeasureSerially);
  CHECK(log.text().find("measuring it again one edge at a time") != std::string::npos);

  // A live process (this one) is never blamed, in any step.
  for (bool parallel : {false, true})
    CHECK(judge_row(encode_marker(marker_of(self, "time", parallel)), "conv3 [conv2d c]").verdict == Verdict::Measure);

  // A pid from another PID namespace that is free here: not blamed, measured again, unless its
  // liveness lock says the process is gone.
  const ProcessStamp elsewhere{dead_pid, self.boot, 12345, "pid:[1]"};
  CHECK(judge_row(encode_marker(marker_of(elsewhere, "time", false)), "conv4 [conv2d d]").verdict == Verdict::Measure);
  {
    TempDir dir;
    const auto database = dir / "cache.sqlite3";
    auto other = LivenessLock::take(database);  // the other process's lock, held here
    REQUIRE(other.slot() >= 0);
    ProcessStamp locked = elsewhere;
    locked.liveness_slot = other.slot();
    const std::string row = encode_marker(marker_of(locked, "time", false, true));
    CHECK(decode_marker(row)->owner.liveness_slot == other.slot());
    CHECK(judge_row(row, "conv5 [conv2d e]", database).verdict == Verdict::Measure);  // held: alive
    // A second taker gets the next slot.
    auto second = LivenessLock::take(database);
    CHECK(second.slot() == other.slot() + 1);
    other = LivenessLock();  // the process died: the kernel dropped its lock
    CHECK(LivenessLock::held(database, locked.liveness_slot) == std::optional<bool>(false));
    const auto judged = judge_row(row, "conv5 [conv2d e]", database);
    CHECK(judged.verdict == Verdict::Crashed);  // a restarted container's new namespace still blames it
    CHECK(judge_row(row, "conv5 [conv2d e]").verdict == Verdict::Measure);  // no cache to read slots from
  }

  CHECK(judge_row(encode_unmeasured(true), "x").verdict == Verdict::MeasureSerially);
  CHECK(judge_row(encode_unmeasured(false), "x").verdict == Verdict::Measure);
  CHECK(judge_row("garbage", "x").verdict == Verdict::Measure);
}

TEST_CASE("crash journal: the rows one journal writes", "[cache][journal]") {
  TempDir dir;
  LayeredCache store(PlanCache::open(dir / "cache.sqlite3"), PlanCache());
  REQUIRE(store.writable().enabled());
  const ProcessStamp self = ProcessStamp::self();
  auto row = [&](const std::string& key) { return store.load_measurement(key).value_or("<none>"); };
  auto marker = [&](const std::string& key) {
    const auto m = decode_marker(row(key));
    REQUIRE(m);
    CHECK(m->owner.pid == self.pid);
    CHECK(m->owner.start == self.start);
    return *m;
  };
  using Step = CrashJournal::Step;

  SECTION("parallel steps of one key nest; the last end() clears the marker") {
    CrashJournal journal(&store);
    journal.begin("a", "pipeline", Step::Parallel);
    journal.begin("a", "pipeline", Step::Parallel);
    CHECK(marker("a").parallel);
    CHECK(marker("a").phase == "pipeline");
    journal.end("a");
    CHECK(marker("a").parallel);  // the other pipeline is still in flight
    journal.end("a");
    CHECK(row("a") == "unmeasured");
    journal.begin("a", "time", Step::Serial);
    CHECK(!marker("a").parallel);
    CHECK(journal.finish("a", "ok 1.250000"));
    CHECK(row("a") == "ok 1.250000");
  }
  SECTION("a journal left early (cancelled, an exception) clears every marker it still has") {
    {
      CrashJournal journal(&store);
      journal.begin("p", "compile", Step::Parallel);
      journal.begin("s", "time", Step::Serial);
      journal.begin("r", "compile", Step::Retry);
      journal.begin("r", "pipeline", Step::Retry);
      CHECK(marker("r").phase == "pipeline");
      CHECK(!marker("r").parallel);
      journal.begin("done", "time", Step::Serial);
      journal.finish("done", "failed x");
    }
    CHECK(row("p") == "unmeasured");
    CHECK(row("s") == "unmeasured");
    CHECK(row("r") == "unmeasured serial");  // still to be retried alone
    CHECK(row("done") == "failed x");
  }
  SECTION("without a writable cache nothing is written") {
    LayeredCache none;
    CrashJournal journal(&none);
    CHECK(!journal.enabled());
    journal.begin("a", "time", Step::Serial);
    CHECK(journal.finish("a", "ok 1"));
    CrashJournal null_store(nullptr);
    CHECK(!null_store.enabled());
  }
}

TEST_CASE("crash journal: a timing marker is on the disk before the edge runs on the GPU", "[cache][journal]") {
  // A GPU hang can freeze the whole machine, which loses what is only in the OS's page cache.
  TempDir dir;
  WalSyncCounter counter;
  {
    LayeredCache store(PlanCache::open(dir / "cache.sqlite3"), PlanCache());
    REQUIRE(store.writable().enabled());
    using Step = CrashJournal::Step;
    CrashJournal journal(&store);
    const int before = counter.syncs();
    // Steps on the host, and results: written, not synced one by one.
    journal.begin("c", "compile", Step::Parallel);
    journal.end("c");
    journal.begin("p", "pipeline", Step::Serial);
    journal.end("p");
    REQUIRE(journal.finish("p", "ok 0.5"));
    CHECK(counter.syncs() == before);
    journal.begin("t", "time", Step::Serial);
    const int after_marker = counter.syncs();
    CHECK(after_marker > before);
    CHECK(decode_marker(store.load_measurement("t").value_or("")).has_value());
    REQUIRE(journal.finish("t", "ok 1.0"));
    journal.begin("c2", "compile", Step::Retry);
    CHECK(counter.syncs() == after_marker);  // synchronous=NORMAL again after the synced commit
    journal.begin("r", "time", Step::Retry);
    CHECK(counter.syncs() > after_marker);
    const int synced = counter.syncs();
    CHECK(store.store_measurement("plain", "ok 2"));
    CHECK(store.store_measurement("synced", "ok 3", PlanCache::Durability::Synced));
    CHECK(counter.syncs() > synced);
  }
}

TEST_CASE("crash journal: a result the store refuses leaves no marker for a later run to blame", "[cache][journal]") {
  // Another process holds the write lock past this store's busy timeout when a result (or an
  // end) is written: the marker could not be replaced. The journal keeps it open and replaces it
  // when it is destroyed, once the lock is gone; before, it stayed a marker of a dead process,
  // which the next run judged a crash and never measured again.
  TempDir dir;
  CacheOpenOptions options;
  options.busy_timeout = std::chrono::milliseconds(50);
  LayeredCache store(PlanCache::open(dir / "cache.sqlite3", options), PlanCache());
  REQUIRE(store.writable().enabled());
  using Step = CrashJournal::Step;
  {
    CrashJournal journal(&store);
    journal.begin("timed", "time", Step::Serial);
    journal.begin("compiled", "compile", Step::Retry);
    sqlite3* other = nullptr;
    REQUIRE(sqlite3_open((dir / "cache.sqlite3").c_str(), &other) == SQLITE_OK);
    REQUIRE(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK);
    CHECK_FALSE(journal.finish("timed", "ok 1.5"));
    journal.end("compiled");
    REQUIRE(sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(other);
    CHECK(decode_marker(store.load_measurement("timed").value_or("")));  // still the marker
  }
  CHECK(store.load_measurement("timed").value_or("<none>") == "unmeasured");
  CHECK(store.load_measurement("compiled").value_or("<none>") == "unmeasured serial");
  CHECK(judge_row(store.load_measurement("timed").value_or(""), "timed").verdict == Verdict::Measure);
}

TEST_CASE("crash journal: the test hook aborts only in its phase, for matching edges", "[cache][journal]") {
  const std::vector<int> status = run_children(3, [](int i) {
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    std::signal(SIGABRT, SIG_DFL);  // not Catch's handler: die as a measuring process would
    EnvOverride env("DENOX_TEST_CRASH_MEASURING", "time:conv2d b");
    const CrashHook hook = CrashHook::from_environment();
    hook.at("compile", true, "conv2 [conv2d b]");  // another phase
    hook.at("time", false, "conv1 [conv2d a]");    // another edge
    if (i == 0) hook.at("time", false, "conv2 [conv2d b]");
    if (i == 1) hook.at("time", true, "x+conv2 [conv2d b]");
    return 0;
  });
  CHECK(status == std::vector<int>{-1, -1, 0});  // -1: died from a signal (SIGABRT)
  EnvOverride off("DENOX_TEST_CRASH_MEASURING", std::nullopt);
  CrashHook::from_environment().at("time", false, "conv2 [conv2d b]");  // no hook: returns
}

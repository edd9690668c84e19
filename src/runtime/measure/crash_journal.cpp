#include "runtime/measure/crash_journal.hpp"

#include <signal.h>
#include <unistd.h>


#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/log.hpp"
#include "runtime/cache/layered_cache.hpp"

namespace denox::measure {

namespace {

std::string read_boot_id() {
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (!(f >> id)) return {};
  return id;
}

// The machine: systemd's machine id, else D-Bus's. Empty where neither exists. Not the host
// name: a container started anew (after the machine rebooted, say) gets a new one, and would
// take its own machine for another.
std::string read_host() {
  for (const char* file : {"/etc/machine-id", "/var/lib/dbus/machine-id"}) {
    std::ifstream f(file);
    std::string id;
    if (f >> id && id.size() <= 64 && id.find('=') == std::string::npos) return id;  // (one token of a marker)
  }
  return {};
}

// "pid:[4026531836]": the PID namespace that `pid` numbers live in. Empty where unknown.
std::string read_pid_namespace(const std::string& pid) {
  std::error_code error;
  const auto target = std::filesystem::read_symlink("/proc/" + pid + "/ns/pid", error);
  return error ? std::string() : target.string();
}

// State (field 3) and start time (field 22) from /proc/<pid>/stat. The command name (field 2)
// is in parentheses and may hold spaces and ')', so fields are counted after the last ')'.
struct ProcStat {
  char state = '?';
  unsigned long long start = 0;
};

std::optional<ProcStat> read_stat(long pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(text.substr(close + 1));
  ProcStat s;
  std::string field;
  for (int n = 3; n <= 22 && rest >> field; ++n) {
    if (n == 3) s.state = field.empty() ? '?' : field[0];
    if (n == 22) {
      try {
        s.start = std::stoull(field);
        return s;
      } catch (const std::exception&) {
        return std::nullopt;
      }
    }
  }
  return std::nullopt;
}

long long unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool same_process(const ProcessStamp& a, const ProcessStamp& b) {
  return a.pid == b.pid && a.boot == b.boot && a.start == b.start && a.pid_namespace == b.pid_namespace;
}

}  // namespace

ProcessStamp ProcessStamp::self() {
  ProcessStamp p;
  p.pid = static_cast<long>(::getpid());
  p.boot = read_boot_id();
  if (const auto s = read_stat(p.pid)) p.start = s->start;
  p.pid_namespace = read_pid_namespace("self");
  p.host = read_host();
  return p;
}

std::optional<ProcessStamp> ProcessStamp::of(long pid) {
  const auto s = read_stat(pid);
  if (!s) return std::nullopt;
  return ProcessStamp{pid, read_boot_id(), s->start, read_pid_namespace(std::to_string(pid)), -1, read_host()};
}

bool process_alive(const ProcessStamp& p, const std::filesystem::path& database, int own_slot) {
  if (p.pid <= 0) return false;  // not a process id (kill(0 or -n) would signal groups)
  // Where the pid cannot be looked up from here, the liveness lock tells; without one the
  // process cannot be told dead.
  const auto by_liveness_lock = [&] {
    if (p.liveness_slot < 0 || database.empty()) return true;
    if (p.liveness_slot == own_slot) return false;  // this process holds it: the marker's process is gone
    return cache::LivenessLock::held(database, p.liveness_slot).value_or(true);
  };
  const std::string boot = read_boot_id();
  if (!p.boot.empty() && !boot.empty() && p.boot != boot) {
    // Another kernel: this machine rebooted since, or another machine sharing the cache. The
    // machine ids tell which where both are known. Where one is unknown (no /etc/machine-id:
    // minimal containers and chroots), the liveness lock tells, as for another machine: a reboot
    // freed the slot. Only older markers, with neither a machine nor a slot, count as a reboot.
    const std::string host = read_host();
    if (!p.host.empty() && !host.empty()) return p.host == host ? false : by_liveness_lock();
    if (p.host.empty() && p.liveness_slot < 0) return false;
    return by_liveness_lock();
  }
  // Another PID namespace (another container on a shared cache): its pids cannot be looked up
  // from here.
  if (!p.pid_namespace.empty() && p.pid_namespace != read_pid_namespace("self")) return by_liveness_lock();
  if (::kill(static_cast<pid_t>(p.pid), 0) != 0 && errno == ESRCH) return false;
  const auto s = read_stat(p.pid);
  if (!s) return true;  // /proc cannot tell (not Linux, hidepid): never blame a live process
  if (s->state == 'Z' || s->state == 'X') return false;  // died, not yet reaped by its parent
  return p.start == 0 || s->start == p.start;  // another start time: the pid was reused
}

std::string encode_marker(const Marker& m) {
  return "running pid=" + std::to_string(m.owner.pid) + " boot=" + (m.owner.boot.empty() ? "-" : m.owner.boot) +
         " start=" + std::to_string(m.owner.start) + " phase=" + m.phase + " mode=" + (m.parallel ? "parallel" : m.retry ? "retry" : "serial") +
         " at=" + std::to_string(m.at) + (m.owner.pid_namespace.empty() ? "" : " ns=" + m.owner.pid_namespace) +
         (m.owner.liveness_slot < 0 ? "" : " slot=" + std::to_string(m.owner.liveness_slot)) +
         (m.owner.host.empty() ? "" : " host=" + m.owner.host);
}

std::optional<Marker> decode_marker(std::string_view text) {
  if (text.substr(0, 8) != "running ") return std::nullopt;
  std::istringstream in{std::string(text.substr(8))};
  Marker m;
  bool pid = false, mode = false;
  std::string field;
  try {
    while (in >> field) {
      const auto eq = field.find('=');
      if (eq == std::string::npos) return std::nullopt;
      const std::string name = field.substr(0, eq), value = field.substr(eq + 1);
      if (name == "pid") m.owner.pid = std::stol(value), pid = true;
      else if (name == "boot") m.owner.boot = value == "-" ? "" : value;
      else if (name == "start") m.owner.start = std::stoull(value);
      else if (name == "phase") m.phase = value;
      else if (name == "mode") m.parallel = value != "serial" && value != "retry", m.retry = value == "retry", mode = true;  // unknown: parallel (no blame)
      else if (name == "at") m.at = std::stoll(value);
      else if (name == "ns") m.owner.pid_namespace = value;
      else if (name == "slot") m.owner.liveness_slot = std::stoi(value);
      else if (name == "host") m.owner.host = value;
    }
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (!pid || !mode || m.phase.empty()) return std::nullopt;
  return m;
}

std::string encode_unmeasured(bool serial) { return serial ? "unmeasured serial" : "unmeasured"; }

std::optional<bool> decode_unmeasured(std::string_view text) {
  if (text == "unmeasured") return false;
  if (text == "unmeasured serial") return true;
  return std::nullopt;
}

Judgement judge_row(std::string_view text, const std::string& what, const std::filesystem::path& database, int own_slot) {
  using Verdict = Judgement::Verdict;
  if (const auto serial = decode_unmeasured(text)) return {*serial ? Verdict::MeasureSerially : Verdict::Measure, ""};
  const auto marker = decode_marker(text);
  if (!marker) return {};  // neither a result nor a marker (a damaged row): measured again
  const Marker& m = *marker;
  if (process_alive(m.owner, database, own_slot)) {
    const ProcessStamp self = ProcessStamp::self();
    const std::string lock_says = m.owner.liveness_slot >= 0 ? " (its liveness lock is held)" : " (alive or not: cannot be told from here)";
    const std::string who = same_process(m.owner, self) ? "another model of this process"
                            : !m.owner.host.empty() && m.owner.host != self.host && m.owner.boot != self.boot
                                ? "process " + std::to_string(m.owner.pid) + " of machine " + m.owner.host + lock_says
                            : !m.owner.pid_namespace.empty() && m.owner.pid_namespace != self.pid_namespace
                                ? "process " + std::to_string(m.owner.pid) + " of another PID namespace" + lock_says
                                : "process " + std::to_string(m.owner.pid);
    log::info("denox: {} is being measured by {} at the same time (since {} s); measuring it here too", what, who, unix_now() - m.at);
    return {};
  }
  const std::string when = std::to_string(unix_now() - m.at) + " s ago";
  if (m.parallel) {
    log::warn("denox: process {} died ({}) while {} on several threads, {} among them; measuring it again one edge at a time "
                 "(shader compile, driver pipeline and timing each alone) to find the one that crashes",
                 m.owner.pid, when, m.phase == "compile" ? "compiling the shaders of several edges" : "creating the driver pipelines of several edges",
                 what);
    return {Verdict::MeasureSerially, ""};
  }
  if (!m.retry) {
    log::warn("denox: process {} died ({}) while {} was measured alone ({}); measuring it again alone (the process may have ended "
              "for another reason: quit, killed); if that dies too, it is recorded as failed",
              m.owner.pid, when, what, m.phase);
    return {Verdict::MeasureSerially, ""};
  }
  log::warn("denox: {} crashed process {} ({}) while being measured alone ({}), a second time; recorded as failed, not tried again "
            "on this device (`denox cache clear` forgets it)",
            what, m.owner.pid, when, m.phase);
  return {Verdict::Crashed, "crashed the process while being measured (" + m.phase + ")"};
}

CrashJournal::CrashJournal(cache::LayeredCache* store) : store_(store != nullptr && store->writable().enabled() ? store : nullptr) {
  if (!store_) return;
  self_ = ProcessStamp::self();
  database_ = store_->writable().path();
  liveness_ = cache::LivenessLock::take(database_);
  self_.liveness_slot = liveness_.slot();
}

CrashJournal::~CrashJournal() {
  std::lock_guard lock(mutex_);
  for (const auto& [key, open] : open_) {
    try {
      write(key, encode_unmeasured(open.retry));
    } catch (...) {
    }
  }
}

bool CrashJournal::write(const std::string& key, const std::string& value, bool synced) {
  if (store_ == nullptr) return true;
  if (store_->store_measurement(key, value, synced ? cache::PlanCache::Durability::Synced : cache::PlanCache::Durability::Normal))
    return true;
  log::debug("denox: could not store '{}' in the measurement store", value);
  return false;
}

void CrashJournal::begin(const std::string& key, const char* phase, Step step) {
  if (store_ == nullptr) return;
  std::lock_guard lock(mutex_);
  Open& open = open_[key];
  if (step == Step::Parallel && open.depth++ > 0) return;  // already marked by another thread
  if (step == Step::Parallel) open.retry = false;  // (an entry kept after a failed write has its old flag)
  if (step != Step::Parallel) {
    open.depth = 1;
    open.retry = step == Step::Retry;
  }
  const bool on_the_gpu = std::string_view(phase) == "time";  // (see the header comment)
  write(key, encode_marker(Marker{self_, phase, step == Step::Parallel, unix_now(), step == Step::Retry}), on_the_gpu);
}

void CrashJournal::end(const std::string& key) {
  if (store_ == nullptr) return;
  std::lock_guard lock(mutex_);
  const auto it = open_.find(key);
  if (it == open_.end() || --it->second.depth > 0) return;
  // A marker that could not be replaced (the store busy past its timeout, a full disk) stays
  // open: the destructor tries again, else the next run would blame this edge for a crash.
  if (write(key, encode_unmeasured(it->second.retry))) open_.erase(it);
  else it->second.depth = 0;
}

bool CrashJournal::finish(const std::string& key, const std::string& result) {
  if (store_ == nullptr) return true;
  std::lock_guard lock(mutex_);
  if (!write(key, result)) {  // as in end(): the destructor replaces the marker if it can
    if (const auto it = open_.find(key); it != open_.end()) it->second.depth = 0;
    return false;
  }
  open_.erase(key);
  return true;
}

CrashHook CrashHook::from_environment() {
  CrashHook hook;
  const char* env = std::getenv("DENOX_TEST_CRASH_MEASURING");
  const std::string value = env != nullptr ? env : "";
  const auto colon = value.find(':');
  if (colon == std::string::npos || colon + 1 == value.size()) return hook;
  hook.phase_ = value.substr(0, colon);
  hook.text_ = value.substr(colon + 1);
  return hook;
}

void CrashHook::at(const char* phase, bool parallel, const std::string& what) const {
  if (text_.empty() || phase_ != phase || what.find(text_) == std::string::npos) return;
  std::fprintf(stderr, "denox: DENOX_TEST_CRASH_MEASURING: aborting in %s (%s) of %s\n", phase, parallel ? "parallel" : "serial",
               what.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace denox::measure

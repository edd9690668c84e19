#include "cache_test_util.hpp"

#include <spdlog/sinks/ringbuffer_sink.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>

#include "common/log.hpp"

namespace denox::cache::test {

TempDir::TempDir() {
  std::string pattern = "/tmp/denox-cache-test-XXXXXX";
  REQUIRE(mkdtemp(pattern.data()) != nullptr);
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

DeviceIdentity sample_device(std::uint32_t device_id) {
  DeviceIdentity device;
  device.vendor_id = 0x10de;
  device.device_id = device_id;
  for (std::size_t i = 0; i < device.pipeline_cache_uuid.size(); ++i)
    device.pipeline_cache_uuid[i] = static_cast<std::uint8_t>(i * 17 + 3);
  device.driver_version = 0x91000000;
  device.driver_name = "NVIDIA";
  return device;
}

CacheKey sample_key(const std::string& model, const std::string& options) {
  return CacheKey{"hash-of-" + model, sample_device(), "0.1.0", options};
}

std::vector<std::uint8_t> sample_bytes(std::size_t size, std::uint32_t seed) {
  std::vector<std::uint8_t> out(size);
  std::uint32_t state = seed * 2654435761u + 1;
  for (auto& b : out) {
    state = state * 1664525u + 1013904223u;
    b = static_cast<std::uint8_t>(state >> 24);
  }
  return out;
}

std::vector<std::uint32_t> sample_words(std::size_t count, std::uint32_t seed) {
  std::vector<std::uint32_t> out(count);
  std::uint32_t state = seed + 0x07230203u;  // starts like a SPIR-V magic, for readability only
  for (auto& w : out) {
    w = state;
    state = state * 1664525u + 1013904223u;
  }
  return out;
}

void write_file(const fs::path& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

std::vector<std::uint8_t> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::vector<fs::path> files_containing(const fs::path& dir, const std::string& part) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename().string().find(part) != std::string::npos) out.push_back(entry.path());
  return out;
}

namespace {

struct RawDb {
  sqlite3* db = nullptr;
  explicit RawDb(const fs::path& path) {
    const int rc = sqlite3_open(path.c_str(), &db);
    INFO(sqlite3_errstr(rc));
    REQUIRE(rc == SQLITE_OK);
    REQUIRE(sqlite3_busy_timeout(db, 10000) == SQLITE_OK);
  }
  ~RawDb() { sqlite3_close(db); }
};

}  // namespace

void raw_exec(const fs::path& path, const std::string& sql) {
  RawDb raw(path);
  char* message = nullptr;
  const int rc = sqlite3_exec(raw.db, sql.c_str(), nullptr, nullptr, &message);
  INFO(sql << ": " << (message != nullptr ? message : ""));
  sqlite3_free(message);
  REQUIRE(rc == SQLITE_OK);
}

std::int64_t raw_query_int(const fs::path& path, const std::string& sql) {
  RawDb raw(path);
  sqlite3_stmt* stmt = nullptr;
  REQUIRE(sqlite3_prepare_v2(raw.db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(stmt) == SQLITE_ROW);
  const std::int64_t value = sqlite3_column_int64(stmt, 0);
  sqlite3_finalize(stmt);
  return value;
}

EnvOverride::EnvOverride(std::string name, std::optional<std::string> value) : name_(std::move(name)) {
  if (const char* old = std::getenv(name_.c_str())) old_ = old;
  if (value)
    setenv(name_.c_str(), value->c_str(), 1);
  else
    unsetenv(name_.c_str());
}

EnvOverride::~EnvOverride() {
  if (old_)
    setenv(name_.c_str(), old_->c_str(), 1);
  else
    unsetenv(name_.c_str());
}

LogCapture::LogCapture()
    : previous_(spdlog::default_logger()), previous_level_(spdlog::get_level()), previous_denox_level_(denox::log::logger().level()) {
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256);
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink));
  spdlog::set_level(spdlog::level::debug);
  denox::log::logger().set_level(spdlog::level::debug);
  sink_ = sink;
}

LogCapture::~LogCapture() {
  denox::log::logger().set_level(previous_denox_level_);
  spdlog::set_default_logger(previous_);
  spdlog::set_level(previous_level_);
}

std::string LogCapture::text() const {
  std::string out;
  for (const auto& line : static_cast<spdlog::sinks::ringbuffer_sink_mt*>(sink_.get())->last_formatted())
    out += line;
  return out;
}

std::vector<int> run_children(int count, const std::function<int(int)>& body) {
  int gate[2];
  REQUIRE(pipe(gate) == 0);
  std::vector<pid_t> pids;
  for (int i = 0; i < count; ++i) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      close(gate[1]);
      char byte;
      // Blocks until the parent closes its end: then read returns 0 in every child at once.
      while (read(gate[0], &byte, 1) > 0) {
      }
      int status = 1;
      try {
        status = body(i);
      } catch (...) {
        status = 2;
      }
      std::_Exit(status);  // no Catch2 reporting, atexit handlers or buffered output flushes
    }
    pids.push_back(pid);
  }
  close(gate[0]);
  close(gate[1]);
  std::vector<int> statuses;
  for (pid_t pid : pids) {
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    statuses.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  return statuses;
}

}  // namespace denox::cache::test

// Helpers shared by the cache tests: temporary directories, sample keys and payloads, raw
// sqlite access for damaging files, captured log output and forked child processes.
#pragma once

#include <spdlog/spdlog.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/cache/cache_key.hpp"

namespace denox::cache::test {

namespace fs = std::filesystem;

// A fresh directory under /tmp, removed with everything in it at scope end.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

DeviceIdentity sample_device(std::uint32_t device_id = 0x2330);
CacheKey sample_key(const std::string& model = "model-a", const std::string& options = "precision=fp16");
// Deterministic pseudo-random bytes/words, different for every seed.
std::vector<std::uint8_t> sample_bytes(std::size_t size, std::uint32_t seed);
std::vector<std::uint32_t> sample_words(std::size_t count, std::uint32_t seed);

void write_file(const fs::path& path, const std::vector<std::uint8_t>& bytes);
std::vector<std::uint8_t> read_file(const fs::path& path);
// The files in dir whose names contain part.
std::vector<fs::path> files_containing(const fs::path& dir, const std::string& part);

// Runs SQL on the file through a plain sqlite connection (outside PlanCache); REQUIREs success.
void raw_exec(const fs::path& db, const std::string& sql);
std::int64_t raw_query_int(const fs::path& db, const std::string& sql);

// Sets an environment variable (or unsets it for nullopt) and restores it at scope end.
class EnvOverride {
 public:
  EnvOverride(std::string name, std::optional<std::string> value);
  ~EnvOverride();
  EnvOverride(const EnvOverride&) = delete;
  EnvOverride& operator=(const EnvOverride&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// Routes spdlog's default logger into memory while alive, with denox's logger (which forwards
// to it) at debug level.
class LogCapture {
 public:
  LogCapture();
  ~LogCapture();
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
  std::string text() const;

 private:
  std::shared_ptr<spdlog::logger> previous_;
  spdlog::level::level_enum previous_level_, previous_denox_level_;
  std::shared_ptr<void> sink_;
};

// Forks count children that each run body(index) and exit with its result (0 = success; an
// exception counts as failure). Children start together: they wait on a pipe that is closed
// once all are forked. Returns each child's exit status (-1 if it died from a signal).
std::vector<int> run_children(int count, const std::function<int(int)>& body);

}  // namespace denox::cache::test

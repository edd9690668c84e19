// .npy and .pfm readers/writers: round trips, foreign byte orders and dtypes, and the failure
// modes that matter (truncated files, headers that lie about sizes, writes that fail halfway).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <filesystem>
#include <fstream>
#include <random>

#include <sys/stat.h>

#include "common/error.hpp"
#include "common/read_file.hpp"
#include "io/npy.hpp"
#include "io/pfm.hpp"

namespace fs = std::filesystem;
using denox::Error;
using denox::ErrorCode;
using denox::HostTensor;

namespace {

// A fresh directory under the system temp dir, removed with everything in it at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    std::random_device entropy;
    path = fs::temp_directory_path() / ("denox-test-io-" + std::to_string(entropy()) + std::to_string(entropy()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
  size_t entry_count() const { return static_cast<size_t>(std::distance(fs::directory_iterator(path), {})); }
};

HostTensor float_tensor(std::vector<int64_t> shape) {
  HostTensor t;
  t.shape = std::move(shape);
  t.f32.resize(t.element_count());
  for (size_t i = 0; i < t.f32.size(); ++i) t.f32[i] = static_cast<float>(i) * 0.25f - 3.0f;
  return t;
}

// A .npy file with an arbitrary header dict and payload, for the foreign/malformed cases.
std::string npy_bytes(const std::string& dict, const std::string& payload) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  return out + header + payload;
}

template <typename T>
std::string bytes_of(const std::vector<T>& values, bool big_endian = false) {
  std::string out(values.size() * sizeof(T), '\0');
  std::memcpy(out.data(), values.data(), out.size());
  if (big_endian)
    for (size_t i = 0; i < values.size(); ++i) std::reverse(out.begin() + i * sizeof(T), out.begin() + (i + 1) * sizeof(T));
  return out;
}

ErrorCode code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  FAIL("expected a denox::Error");
  return ErrorCode::Internal;
}

}  // namespace

TEST_CASE("npy round trip keeps shape and values", "[io][npy]") {
  TempDir dir;
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{1, 3, 37, 53}, {5}, {}, {2, 0, 4}}) {
    const HostTensor original = float_tensor(shape);
    const std::string path = dir.file("t.npy");
    denox::io::write_npy(path, original);
    const HostTensor read = denox::io::read_npy(path);
    CHECK(read.shape == original.shape);
    CHECK(read.f32 == original.f32);
    CHECK_FALSE(read.is_int64);
  }
}

TEST_CASE("npy writer emits numpy's version 1.0 layout", "[io][npy]") {
  const std::string bytes = denox::io::encode_npy(float_tensor({2, 3}));
  REQUIRE(bytes.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
  const size_t header_len = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
  CHECK((10 + header_len) % 64 == 0);
  const std::string header = bytes.substr(10, header_len);
  CHECK(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 0) == 0);
  CHECK(header.back() == '\n');
  CHECK(bytes.size() == 10 + header_len + 6 * 4);
  CHECK(denox::io::encode_npy(float_tensor({5})).find("'shape': (5,)") != std::string::npos);
}

TEST_CASE("npy int64 tensors round trip", "[io][npy]") {
  HostTensor t;
  t.is_int64 = true;
  t.shape = {4};
  t.i64 = {1, -2, int64_t{1} << 40, 0};
  const HostTensor read = denox::io::parse_npy(denox::io::encode_npy(t), "mem");
  CHECK(read.is_int64);
  CHECK(read.i64 == t.i64);
}

TEST_CASE("npy reader converts float64, float16 and big-endian data", "[io][npy]") {
  const std::vector<double> f64 = {1.5, -2.25, 1e-3};
  HostTensor t = denox::io::parse_npy(
      npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", bytes_of(f64)), "f64");
  CHECK(t.f32 == std::vector<float>{1.5f, -2.25f, 1e-3f});

  // 1.0, -2.0, 65504 (max half), 2^-24 (smallest subnormal), +inf
  const std::vector<uint16_t> f16 = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x7c00};
  t = denox::io::parse_npy(npy_bytes("{'descr': '<f2', 'fortran_order': False, 'shape': (5,), }", bytes_of(f16)), "f16");
  CHECK(t.f32[0] == 1.0f);
  CHECK(t.f32[1] == -2.0f);
  CHECK(t.f32[2] == 65504.0f);
  CHECK(t.f32[3] == std::ldexp(1.0f, -24));
  CHECK(std::isinf(t.f32[4]));

  const std::vector<float> f32 = {1.0f, 2.0f, -3.5f, 4.0f};
  // Key order, quote style and spacing differ from numpy's on purpose.
  t = denox::io::parse_npy(
      npy_bytes("{\"shape\":(2,2),\"fortran_order\":False,\"descr\":\">f4\"}", bytes_of(f32, true)), "be");
  CHECK(t.shape == std::vector<int64_t>{2, 2});
  CHECK(t.f32 == f32);
}

TEST_CASE("npy reader rejects what it cannot represent or trust", "[io][npy]") {
  const std::string payload = bytes_of(std::vector<float>(6, 1.0f));
  auto parse = [](const std::string& bytes) { return [bytes] { denox::io::parse_npy(bytes, "bad.npy"); }; };

  SECTION("fortran order") {
    const std::string bytes = npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", payload);
    try {
      denox::io::parse_npy(bytes, "bad.npy");
      FAIL("fortran order accepted");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::Io);
      CHECK_THAT(e.what(), Catch::Contains("bad.npy") && Catch::Contains("fortran"));
    }
  }
  SECTION("truncated data") {
    CHECK(code_of(parse(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }", payload))) ==
          ErrorCode::Io);
  }
  SECTION("trailing data") {
    CHECK(code_of(parse(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", payload))) ==
          ErrorCode::Io);
  }
  SECTION("a shape that would need terabytes, or overflows size_t") {
    CHECK(code_of(parse(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000), }",
                                  payload))) == ErrorCode::Io);
    CHECK(code_of(parse(npy_bytes(
              "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4), }", payload))) ==
          ErrorCode::Io);
  }
  SECTION("a header length beyond the file") {
    std::string bytes = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", payload);
    bytes[8] = '\xff';
    bytes[9] = '\xff';
    CHECK(code_of(parse(bytes.substr(0, 100))) == ErrorCode::Io);
  }
  SECTION("unsupported dtype, missing key, bad magic, empty file") {
    CHECK(code_of(parse(npy_bytes("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", payload))) ==
          ErrorCode::Io);
    CHECK(code_of(parse(npy_bytes("{'descr': '<f4', 'shape': (6,), }", payload))) == ErrorCode::Io);
    CHECK(code_of(parse("PK\x03\x04 not numpy")) == ErrorCode::Io);
    CHECK(code_of(parse("")) == ErrorCode::Io);
    std::string many = "(";
    for (int d = 0; d < 65; ++d) many += "1, ";
    try {
      denox::io::parse_npy(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': " + many + "), }", payload), "bad.npy");
      FAIL("65 dimensions accepted");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::Io);
      CHECK_THAT(e.what(), Catch::Contains("more than 64 dimensions"));
      CHECK(std::string(e.what()).size() < 320);  // the header cut at 200 characters
    }
  }
  SECTION("missing file names the path") {
    try {
      denox::io::read_npy("/nonexistent/dir/x.npy");
      FAIL("missing file accepted");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::Io);
      CHECK_THAT(e.what(), Catch::Contains("/nonexistent/dir/x.npy"));
    }
  }
  // A directory made the stream throw a message without the path; /dev/zero was read until
  // memory ran out (found by fuzzing).
  SECTION("a directory and a device are refused by name, not read") {
    TempDir dir;
    const std::string folder = dir.file("images.npy");
    std::filesystem::create_directory(folder);
    for (const auto& [path, why] : std::vector<std::pair<std::string, std::string>>{{folder, "is a directory"}, {"/dev/zero", "not a regular file"}}) {
      try {
        denox::io::read_npy(path);
        FAIL(path + " accepted");
      } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::Io);
        CHECK_THAT(e.what(), Catch::Contains(path) && Catch::Contains(why));
      }
    }
  }
  // Every reader of whole files (models, calibrations, tensors) goes through
  // read_regular_file; a file whose size changes under it fails rather than returning a part.
  SECTION("a file whose size is not what it holds is refused naming both") {
    // /proc files report size 0 and hold text: the same as a file grown while being read.
    try {
      denox::read_regular_file("/proc/self/status");
      FAIL("/proc/self/status read");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::Io);
      CHECK_THAT(e.what(), Catch::Contains("/proc/self/status: its size changed while it was read (0 bytes when opened, more read)"));
    }
    TempDir dir;
    const std::string empty = dir.file("empty.bin");
    std::ofstream(empty).close();
    CHECK(denox::read_regular_file(empty).empty());
  }
}

TEST_CASE("pfm round trip for 3 and 1 channels", "[io][pfm]") {
  TempDir dir;
  for (int64_t channels : {3, 1}) {
    const HostTensor original = float_tensor({1, channels, 5, 7});
    const std::string path = dir.file("img.pfm");
    denox::io::write_pfm(path, original);
    const HostTensor read = denox::io::read_pfm(path);
    CHECK(read.shape == original.shape);
    CHECK(read.f32 == original.f32);
    const std::string bytes = denox::read_regular_file(path);
    CHECK(bytes.substr(0, 2) == (channels == 3 ? "PF" : "Pf"));
    CHECK(bytes.find("-1.0\n") != std::string::npos);  // little endian
  }
}

TEST_CASE("pfm reader handles both byte orders and stores the bottom row first", "[io][pfm]") {
  // A 2x2 single-channel image whose file rows are bottom-to-top: file row 0 = image row 1.
  const std::vector<float> file_order = {3.0f, 4.0f, 1.0f, 2.0f};
  for (bool big_endian : {false, true}) {
    const std::string bytes = std::string("Pf\n2 2\n") + (big_endian ? "1.0\n" : "-1.0\n") + bytes_of(file_order, big_endian);
    const HostTensor image = denox::io::parse_pfm(bytes, "mem.pfm");
    CHECK(image.shape == std::vector<int64_t>{1, 1, 2, 2});
    CHECK(image.f32 == std::vector<float>{1.0f, 2.0f, 3.0f, 4.0f});  // top row first
  }
  const HostTensor color = float_tensor({1, 3, 4, 3});
  for (bool big_endian : {false, true}) {
    const HostTensor read = denox::io::parse_pfm(denox::io::encode_pfm(color, big_endian), "mem.pfm");
    CHECK(read.f32 == color.f32);
  }
  // Other whitespace between header fields, and a "\r\n" after the scale.
  const HostTensor crlf = denox::io::parse_pfm("Pf  2\t2\r\n-1.0\r\n" + bytes_of(file_order), "crlf.pfm");
  CHECK(crlf.f32 == std::vector<float>{1.0f, 2.0f, 3.0f, 4.0f});
}

TEST_CASE("pfm reader rejects malformed, truncated and lying files", "[io][pfm]") {
  const std::string pixels = bytes_of(std::vector<float>(12, 0.5f));  // 2x2 RGB
  auto code = [](const std::string& bytes) { return code_of([&] { denox::io::parse_pfm(bytes, "bad.pfm"); }); };
  CHECK(code("PF\n2 2\n-1.0\n" + pixels.substr(0, 40)) == ErrorCode::Io);      // truncated data
  CHECK(code("PF\n2 2\n-1.0\n" + pixels + "junk") == ErrorCode::Io);           // trailing bytes
  CHECK(code("PF\n100000 100000\n-1.0\n" + pixels) == ErrorCode::Io);          // lying size
  CHECK(code("PF\n2147483647 2147483647\n-1.0\n" + pixels) == ErrorCode::Io);  // 2^64-scale size
  CHECK(code("PF\n2 -2\n-1.0\n" + pixels) == ErrorCode::Io);
  CHECK(code("PF\n2 2\n0\n" + pixels) == ErrorCode::Io);  // scale 0 has no byte order
  CHECK(code("PF\n2 2\nabc\n" + pixels) == ErrorCode::Io);
  CHECK(code("P6\n2 2\n255\n" + pixels) == ErrorCode::Io);
  CHECK(code("PF\n2 2") == ErrorCode::Io);
  CHECK(code("") == ErrorCode::Io);
}

TEST_CASE("failed writes leave no file behind and keep the old one", "[io][atomic]") {
  TempDir dir;
  const std::string path = dir.file("out.pfm");

  // Two channels cannot be stored in a PFM: InvalidArgument, and nothing is created.
  CHECK(code_of([&] { denox::io::write_pfm(path, float_tensor({1, 2, 4, 4})); }) == ErrorCode::InvalidArgument);
  CHECK_FALSE(fs::exists(path));

  // A tensor whose data does not match its shape.
  HostTensor broken = float_tensor({2, 3});
  broken.f32.pop_back();
  CHECK(code_of([&] { denox::io::write_npy(dir.file("broken.npy"), broken); }) == ErrorCode::InvalidArgument);
  CHECK_FALSE(fs::exists(dir.file("broken.npy")));

  // A directory that does not exist: an Io error naming the path.
  const std::string missing_dir_path = dir.file("no/such/dir/out.npy");
  try {
    denox::io::write_npy(missing_dir_path, float_tensor({2}));
    FAIL("write into a missing directory succeeded");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::Io);
    CHECK_THAT(e.what(), Catch::Contains(missing_dir_path));
  }

  // A failed overwrite keeps the previous file intact; successful writes leave no temp files.
  const HostTensor first = float_tensor({1, 3, 2, 2});
  denox::io::write_pfm(path, first);
  CHECK_THROWS_AS(denox::io::write_pfm(path, float_tensor({1, 4, 2, 2})), Error);
  CHECK(denox::io::read_pfm(path).f32 == first.f32);
  denox::io::write_npy(dir.file("ok.npy"), first);
  CHECK(dir.entry_count() == 2);  // out.pfm and ok.npy, no ".tmp-" leftovers

  // Renaming over a directory fails after the data was written: the temp file is removed.
  fs::create_directories(dir.path / "occupied.npy" / "child");
  CHECK(code_of([&] { denox::io::write_npy(dir.file("occupied.npy"), first); }) == ErrorCode::Io);
  CHECK(dir.entry_count() == 3);
}

TEST_CASE("a range of a file is read through the descriptor that was checked", "[io][range]") {
  TempDir dir;
  const fs::path data = dir.file("data.bin"), link = dir.file("link.bin");
  std::string content(100, '\0');
  for (size_t k = 0; k < content.size(); ++k) content[k] = static_cast<char>(k * 7 + 3);
  std::ofstream(data, std::ios::binary).write(content.data(), static_cast<std::streamsize>(content.size()));
  fs::create_symlink(data, link);
  // Through a link, the check sees the file the kernel opened: what a caller compares with the
  // directory it allows, after any swap of the name.
  denox::OpenedFile seen;
  const std::string part = denox::read_regular_file_range(link, 10, 20, [&](const denox::OpenedFile& f) { seen = f; });
  CHECK(part == content.substr(10, 20));
  CHECK(seen.resolved == fs::canonical(data));
  CHECK(seen.size == 100);
  CHECK(denox::read_regular_file_range(data, 100, 0, [](const denox::OpenedFile&) {}).empty());

  auto error_of = [](const std::function<void()>& f) -> std::pair<std::string, ErrorCode> {
    try {
      f();
    } catch (const Error& e) {
      return {e.what(), e.code()};
    }
    return {"", ErrorCode::Internal};
  };
  // A check that throws stops the read; a range past the end is refused naming the file.
  auto [refused, refused_code] = error_of([&] {
    denox::read_regular_file_range(data, 0, 4, [](const denox::OpenedFile&) { denox::fail(ErrorCode::InvalidModel, "not this one"); });
  });
  CHECK(refused == "not this one");
  CHECK(refused_code == ErrorCode::InvalidModel);
  auto [beyond, beyond_code] = error_of([&] { denox::read_regular_file_range(data, 90, 11, [](const denox::OpenedFile&) {}); });
  CHECK_THAT(beyond, Catch::Contains(data.string() + ": bytes [90, +11) lie beyond its end (100 bytes)"));
  CHECK(beyond_code == ErrorCode::Io);
  // A file cut short between the open and the read (here by the check itself).
  auto [shrunk, shrunk_code] = error_of([&] {
    denox::read_regular_file_range(data, 10, 20, [&](const denox::OpenedFile&) { fs::resize_file(data, 15); });
  });
  CHECK_THAT(shrunk, Catch::Contains("it ended after 15 bytes while it was read (100 when opened)"));
  CHECK(shrunk_code == ErrorCode::Io);
  // A FIFO is refused without waiting for a writer; a directory by name.
  const fs::path fifo = dir.file("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THAT(error_of([&] { denox::read_regular_file_range(fifo, 0, 1, [](const denox::OpenedFile&) {}); }).first,
             Catch::Contains("not a regular file"));
  CHECK_THAT(error_of([&] { denox::read_regular_file_range(dir.path, 0, 1, [](const denox::OpenedFile&) {}); }).first,
             Catch::Contains("is a directory"));
}

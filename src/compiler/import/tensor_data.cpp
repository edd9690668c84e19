#include "compiler/import/tensor_data.hpp"

#include <onnx/onnx_pb.h>
#include <sys/stat.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "common/error.hpp"
#include "common/half.hpp"
#include "common/read_file.hpp"

namespace denox::compiler {

namespace fs = std::filesystem;
using TP = onnx::TensorProto;

const char* onnx_type_name(int32_t t) {
  switch (t) {
    case TP::FLOAT: return "float32";
    case TP::DOUBLE: return "float64";
    case TP::FLOAT16: return "float16";
    case TP::BFLOAT16: return "bfloat16";
    case TP::INT64: return "int64";
    case TP::INT32: return "int32";
    case TP::INT16: return "int16";
    case TP::INT8: return "int8";
    case TP::UINT64: return "uint64";
    case TP::UINT32: return "uint32";
    case TP::UINT16: return "uint16";
    case TP::UINT8: return "uint8";
    case TP::BOOL: return "bool";
    case TP::STRING: return "string";
    // Newer types by number: Debian 12's onnx.proto predates them.
    case 17: return "float8e4m3fn";
    case 18: return "float8e4m3fnuz";
    case 19: return "float8e5m2";
    case 20: return "float8e5m2fnuz";
    case 21: return "uint4";
    case 22: return "int4";
    case 23: return "float4e2m1";
    default: return "unknown-type";
  }
}

bool onnx_type_is_float(int32_t t) {
  return t == TP::FLOAT || t == TP::DOUBLE || t == TP::FLOAT16 || t == TP::BFLOAT16;
}

bool onnx_type_is_integer(int32_t t) {
  switch (t) {
    case TP::INT64: case TP::INT32: case TP::INT16: case TP::INT8:
    case TP::UINT64: case TP::UINT32: case TP::UINT16: case TP::UINT8: case TP::BOOL: return true;
    default: return false;
  }
}

std::pair<double, double> onnx_integer_range(int32_t t) {
  switch (t) {
    case TP::INT8: return {INT8_MIN, INT8_MAX};
    case TP::UINT8: return {0, UINT8_MAX};
    case TP::INT16: return {INT16_MIN, INT16_MAX};
    case TP::UINT16: return {0, UINT16_MAX};
    case TP::INT32: return {INT32_MIN, INT32_MAX};
    case TP::UINT32: return {0, UINT32_MAX};
    case TP::UINT64: return {0, 0x1p64};
    default: return {-0x1p63, 0x1p63};
  }
}

int64_t checked_element_count(const std::vector<int64_t>& dims, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) fail(ErrorCode::InvalidModel, what + " has a negative dimension (" + std::to_string(d) + ")");
    // (Each dimension on its own too: after a 0 the product stays 0, and sums or strides of
    // such dimensions would overflow later.)
    if (d > kMaxTensorElements)
      fail(ErrorCode::InvalidModel, what + " has a dimension of " + std::to_string(d) + ", more than " + std::to_string(kMaxTensorElements));
    if (d != 0 && n > kMaxTensorElements / d) {
      fail(ErrorCode::InvalidModel, what + " claims more than " + std::to_string(kMaxTensorElements) + " elements");
    }
    n *= d;
  }
  return n;
}

std::string format_double(double v) {
  char shown[32];
  std::snprintf(shown, sizeof shown, "%g", v);
  return shown;
}

namespace {

size_t element_bytes(int32_t t) {
  switch (t) {
    case TP::DOUBLE: case TP::INT64: case TP::UINT64: return 8;
    case TP::FLOAT: case TP::INT32: case TP::UINT32: return 4;
    case TP::FLOAT16: case TP::BFLOAT16: case TP::INT16: case TP::UINT16: return 2;
    case TP::INT8: case TP::UINT8: case TP::BOOL: return 1;
    default: return 0;
  }
}

double bfloat16_to_double(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

// A value of the int32_data field fits the narrower type that keeps it there (a uint8 of 1000
// would otherwise reach shape arithmetic as 1000).
bool fits_narrow_type(int32_t v, int32_t type) {
  const auto [lo, hi] = onnx_integer_range(type);
  return v >= lo && v <= hi;
}

// denox computes with int64: a larger uint64 would wrap to a negative number (an axis of -1, a
// size that passes a "< limit" check).
int64_t uint64_as_int64(uint64_t v, const std::string& what) {
  if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    fail(ErrorCode::Unsupported, what + " holds the uint64 value " + std::to_string(v) + ", above 2^63 - 1 (denox computes with int64)");
  return static_cast<int64_t>(v);
}

// Decodes little-endian bytes (raw_data or an external file's span) into `out`.
void decode_bytes(const uint8_t* p, int64_t count, DecodedTensor& out, const std::string& what) {
  auto load = [&](auto tag, int64_t k) {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, p + k * static_cast<int64_t>(sizeof(T)), sizeof(T));
    return v;
  };
  for (int64_t k = 0; k < count; ++k) {
    switch (out.onnx_type) {
      case TP::FLOAT: out.f.push_back(load(float{}, k)); break;
      case TP::DOUBLE: out.f.push_back(load(double{}, k)); break;
      case TP::FLOAT16: out.f.push_back(half_to_float(load(uint16_t{}, k))); break;
      case TP::BFLOAT16: out.f.push_back(bfloat16_to_double(load(uint16_t{}, k))); break;
      case TP::INT64: out.i.push_back(load(int64_t{}, k)); break;
      case TP::UINT64: out.i.push_back(uint64_as_int64(load(uint64_t{}, k), what)); break;
      case TP::INT32: out.i.push_back(load(int32_t{}, k)); break;
      case TP::UINT32: out.i.push_back(load(uint32_t{}, k)); break;
      case TP::INT16: out.i.push_back(load(int16_t{}, k)); break;
      case TP::UINT16: out.i.push_back(load(uint16_t{}, k)); break;
      case TP::INT8: out.i.push_back(load(int8_t{}, k)); break;
      case TP::UINT8: out.i.push_back(load(uint8_t{}, k)); break;
      case TP::BOOL: out.i.push_back(load(uint8_t{}, k) != 0 ? 1 : 0); break;
      default: break;
    }
  }
}

// An external-data location, strictly inside the model's directory: the path to open, the
// directory's and the file's canonical forms, against which the opened file is checked again.
struct ExternalPath {
  fs::path full;
  fs::path canonical_base, canonical_full;
};

// `path` (canonical) lies inside `canonical_base`.
bool lies_inside(const fs::path& path, const fs::path& canonical_base) {
  const auto rel = path.lexically_relative(canonical_base);
  return !rel.empty() && *rel.begin() != "..";
}

ExternalPath resolve_external_path(const std::string& location, const ExternalDataContext& ctx, const std::string& what) {
  if (!ctx.base_dir) {
    fail(ErrorCode::InvalidArgument, what + " is stored in external file '" + location +
                                         "', but the model was loaded from bytes without a base directory");
  }
  fs::path rel(location);
  if (location.empty() || rel.is_absolute() || rel.has_root_name() || rel.has_root_directory()) {
    fail(ErrorCode::InvalidModel, what + ": external data location '" + location + "' must be a relative path");
  }
  for (const auto& part : rel) {
    if (part == "..") {
      fail(ErrorCode::InvalidModel, what + ": external data location '" + location + "' leaves the model's directory");
    }
  }
  fs::path full = *ctx.base_dir / rel;
  std::error_code ec;
  fs::path canonical_base = fs::weakly_canonical(*ctx.base_dir, ec);
  fs::path canonical_full = fs::weakly_canonical(full, ec);
  // Symlinks may still point outside; compare the resolved paths.
  if (ec || !lies_inside(canonical_full, canonical_base)) {
    fail(ErrorCode::InvalidModel, what + ": external data location '" + location + "' resolves outside the model's directory");
  }
  return {full, canonical_base, canonical_full};
}

void read_external(const TP& proto, const ExternalDataContext& ctx, const std::string& what, int64_t count,
                   DecodedTensor& out) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : proto.external_data()) {
    auto parse = [&](const std::string& v) -> int64_t {
      try {
        size_t used = 0;
        long long x = std::stoll(v, &used);
        if (used != v.size() || x < 0) throw std::invalid_argument(v);
        return x;
      } catch (const std::exception&) {
        fail(ErrorCode::InvalidModel, what + ": external data " + kv.key() + " '" + v + "' is not a non-negative integer");
      }
    };
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = parse(kv.value());
    else if (kv.key() == "length") length = parse(kv.value());
  }
  const int64_t need = count * static_cast<int64_t>(element_bytes(out.onnx_type));
  if (length >= 0 && length != need) {
    fail(ErrorCode::InvalidModel, what + ": external data length " + std::to_string(length) + " does not match " +
                                      std::to_string(need) + " bytes for its shape");
  }
  const ExternalPath path = resolve_external_path(location, ctx, what);
  // The checks above read the name; these read the file that was opened. Between the two, a
  // writer in the model's directory could have swapped in a link to a file outside it.
  const auto check_opened = [&](const OpenedFile& opened) {
    if (const std::string why = opened_file_outside(opened, path.canonical_base, path.canonical_full); !why.empty())
      fail(ErrorCode::InvalidModel, what + ": external data file '" + path.full.string() + "' " + why);
    if (static_cast<uint64_t>(offset) > opened.size || static_cast<uint64_t>(need) > opened.size - static_cast<uint64_t>(offset)) {
      fail(ErrorCode::InvalidModel, what + ": external data [" + std::to_string(offset) + ", +" + std::to_string(need) +
                                        ") lies beyond the end of '" + path.full.string() + "' (" + std::to_string(opened.size) +
                                        " bytes)");
    }
  };
  std::string bytes;
  try {
    bytes = read_regular_file_range(path.full, static_cast<uint64_t>(offset), static_cast<size_t>(need), check_opened);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::Io) throw;
    throw Error(e, what + ": external data: " + e.what());  // the reader's message names the path
  }
  decode_bytes(reinterpret_cast<const uint8_t*>(bytes.data()), count, out, what);
}

}  // namespace

std::string opened_file_outside(const OpenedFile& opened, const fs::path& canonical_base, const fs::path& canonical_full) {
  if (!opened.resolved.empty())
    return lies_inside(opened.resolved, canonical_base) ? "" : "opened as '" + opened.resolved.string() + "', outside the model's directory";
  // No /proc: the file opened must be the one the checked name resolved to.
  struct stat named {};
  if (::stat(canonical_full.c_str(), &named) != 0 || static_cast<uint64_t>(named.st_dev) != opened.device ||
      static_cast<uint64_t>(named.st_ino) != opened.inode)
    return "was replaced between the check of its name and its opening";
  return "";
}

DecodedTensor decode_tensor(const TP& proto, const ExternalDataContext& ctx, const std::string& what) {
  DecodedTensor out;
  out.onnx_type = proto.data_type();
  out.dims.assign(proto.dims().begin(), proto.dims().end());
  if (element_bytes(out.onnx_type) == 0) {
    fail(ErrorCode::Unsupported, what + " has element type " + onnx_type_name(out.onnx_type) + " (denox reads float16/bfloat16/float32/float64, 8- to 64-bit integer and bool data)");
  }
  out.is_float = onnx_type_is_float(out.onnx_type);
  const int64_t count = checked_element_count(out.dims, what);

  if (proto.data_location() == TP::EXTERNAL) {
    read_external(proto, ctx, what, count, out);
    return out;
  }
  if (proto.has_raw_data()) {
    const std::string& raw = proto.raw_data();
    const auto need = static_cast<uint64_t>(count) * element_bytes(out.onnx_type);
    if (raw.size() != need) {
      fail(ErrorCode::InvalidModel, what + " has " + std::to_string(raw.size()) + " bytes of raw data; its shape needs " +
                                        std::to_string(need));
    }
    decode_bytes(reinterpret_cast<const uint8_t*>(raw.data()), count, out, what);
    return out;
  }
  // Typed fields: which one holds the data depends on the element type (onnx.proto).
  auto check_count = [&](int64_t have) {
    if (have != count) {
      fail(ErrorCode::InvalidModel, what + " has " + std::to_string(have) + " elements; its shape needs " + std::to_string(count));
    }
  };
  switch (out.onnx_type) {
    case TP::FLOAT:
      check_count(proto.float_data_size());
      for (float v : proto.float_data()) out.f.push_back(v);
      break;
    case TP::DOUBLE:
      check_count(proto.double_data_size());
      for (double v : proto.double_data()) out.f.push_back(v);
      break;
    case TP::FLOAT16:
    case TP::BFLOAT16:
      check_count(proto.int32_data_size());
      for (int32_t v : proto.int32_data()) {
        if (v < 0 || v > UINT16_MAX)
          fail(ErrorCode::InvalidModel, what + " holds " + std::to_string(v) + " as the bits of a 16-bit float");
        auto bits = static_cast<uint16_t>(v);
        out.f.push_back(out.onnx_type == TP::FLOAT16 ? static_cast<double>(half_to_float(bits)) : bfloat16_to_double(bits));
      }
      break;
    case TP::INT64:
      check_count(proto.int64_data_size());
      for (int64_t v : proto.int64_data()) out.i.push_back(v);
      break;
    case TP::UINT64:
    case TP::UINT32:
      check_count(proto.uint64_data_size());
      for (uint64_t v : proto.uint64_data()) {
        // (uint32 data lives in uint64_data too: a value above 2^32 - 1 does not fit its type.)
        if (out.onnx_type == TP::UINT32 && v > UINT32_MAX)
          fail(ErrorCode::InvalidModel, what + " holds " + std::to_string(v) + " in its uint32 data");
        out.i.push_back(uint64_as_int64(v, what));
      }
      break;
    default:  // INT32, INT16, INT8, UINT16, UINT8, BOOL live in int32_data
      check_count(proto.int32_data_size());
      for (int32_t v : proto.int32_data()) {
        if (!fits_narrow_type(v, out.onnx_type))
          fail(ErrorCode::InvalidModel, what + " holds " + std::to_string(v) + " in its " + onnx_type_name(out.onnx_type) + " data");
        out.i.push_back(out.onnx_type == TP::BOOL ? (v != 0) : v);
      }
      break;
  }
  return out;
}

}  // namespace denox::compiler

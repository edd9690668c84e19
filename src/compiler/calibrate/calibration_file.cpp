#include "compiler/calibrate/calibration_file.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <string_view>

#include "common/error.hpp"

namespace denox::autotune {

namespace {

constexpr const char* kFormat = "denox int8 calibration";
constexpr int kVersion = 1;

[[noreturn]] void bad(const std::string& what) { fail(ErrorCode::InvalidArgument, "int8 calibration: " + what); }

const nlohmann::json& field(const nlohmann::json& j, const char* name, nlohmann::json::value_t type, const std::string& where) {
  const auto it = j.find(name);
  if (it == j.end()) bad(where + " has no \"" + name + "\"");
  const bool number = type == nlohmann::json::value_t::number_float;
  if (number ? !it->is_number() : it->type() != type) bad(where + ": \"" + name + "\" has the wrong type");
  return *it;
}

}  // namespace

std::string calibration_to_json(const Calibration& c) {
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& [name, q] : c.table)
    tensors.push_back({{"name", name}, {"scale", static_cast<double>(q.scale)}, {"zero_point", q.zero_point}});
  const nlohmann::json j = {{"format", kFormat}, {"version", kVersion}, {"model", c.model_hash},
                            {"percentile", c.percentile}, {"samples", c.samples}, {"tensors", tensors}};
  return j.dump(1) + "\n";
}

Calibration calibration_from_json(const void* bytes, size_t size) {
  if (bytes == nullptr || size == 0) bad("no bytes");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(std::string_view(static_cast<const char*>(bytes), size));
  } catch (const nlohmann::json::parse_error& e) {
    bad(std::string("not JSON (") + e.what() + ")");
  }
  using vt = nlohmann::json::value_t;
  if (!j.is_object() || j.value("format", "") != kFormat) bad("not a denox int8 calibration (no \"format\": \"" + std::string(kFormat) + "\")");
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int>() != kVersion)
    bad("format version " + (j.contains("version") ? j["version"].dump() : std::string("(none)")) + ", this denox reads version " +
        std::to_string(kVersion) + ": calibrate the model again");
  Calibration c;
  c.model_hash = field(j, "model", vt::string, "the document").get<std::string>();
  c.percentile = field(j, "percentile", vt::number_float, "the document").get<double>();
  c.samples = field(j, "samples", vt::number_unsigned, "the document").get<size_t>();
  for (const auto& t : field(j, "tensors", vt::array, "the document")) {
    if (!t.is_object()) bad("a \"tensors\" entry is not an object");
    const std::string name = field(t, "name", vt::string, "a tensor entry").get<std::string>();
    const std::string where = "tensor '" + name + "'";
    const double scale = field(t, "scale", vt::number_float, where).get<double>();
    if (!t.contains("zero_point") || !t["zero_point"].is_number_integer()) bad(where + " has no integer \"zero_point\"");
    const int64_t zp = t["zero_point"].get<int64_t>();
    if (!(std::isfinite(scale) && scale > 0.0 && scale < 3.0e38)) bad(where + ": scale " + t["scale"].dump() + " is not a positive finite number");
    if (zp != -128 && zp != 0) bad(where + ": zero point " + std::to_string(zp) + " is neither -128 nor 0");
    if (!c.table.emplace(name, kernels::TensorQuant{static_cast<float>(scale), static_cast<int32_t>(zp)}).second)
      bad(where + " is listed twice");
  }
  return c;
}

}  // namespace denox::autotune

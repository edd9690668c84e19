// int8 calibration through the C API (denox_calibrate_*, denox_calibration_*): the model is
// imported as a load would (so the recorded content hash is the plan cache's model key), the
// caller's samples become the CPU reference's inputs, and autotune::calibrate_int8 measures
// every tensor's range. No device: calibration is the same for every GPU.
#include <cstring>
#include <filesystem>

#include "api/api_compile.hpp"
#include "api/api_internal.hpp"
#include "compiler/calibrate/calibrate.hpp"
#include "compiler/calibrate/calibration_file.hpp"

namespace denox::api {
namespace {

// The samples as the reference's NCHW inputs, checked against the graph's inputs: count,
// constant channel counts, extents, non-null arrays (the values are checked by calibrate_int8).
std::vector<std::vector<HostTensor>> sample_tensors(const compiler::Graph& g, const denox_calibration_sample* samples, uint32_t count) {
  if (count == 0) fail(ErrorCode::InvalidArgument, "int8 calibration needs at least one sample (sample_count is 0)");
  require(samples, "samples");
  std::vector<std::vector<HostTensor>> out;
  for (uint32_t s = 0; s < count; ++s) {
    const denox_calibration_sample& sample = samples[s];
    const std::string which = "calibration sample " + std::to_string(s);
    if (sample.input_count != g.inputs.size())
      fail(ErrorCode::InvalidArgument, which + " has " + std::to_string(sample.input_count) + " input(s); the model has " +
                                           std::to_string(g.inputs.size()));
    if (sample.width == 0 || sample.height == 0 || sample.width > 16384 || sample.height > 16384)
      fail(ErrorCode::InvalidArgument, which + ": extent " + std::to_string(sample.width) + "x" + std::to_string(sample.height) +
                                           " is out of range (1..16384)");
    if (sample.input_count > 0) require(sample.inputs, (which + " inputs").c_str());
    std::vector<HostTensor> inputs;
    for (uint32_t i = 0; i < sample.input_count; ++i) {
      const compiler::Tensor& t = g.tensor(g.inputs[i]);
      if (t.shape.size() != 4 || !g.program.is_constant(t.shape[1]))
        fail(ErrorCode::Unsupported, "int8 calibration: model input '" + t.name + "' is not NCHW with a fixed channel count");
      const int64_t channels = g.program.constant_value(t.shape[1]);
      if (sample.inputs[i] == nullptr) fail(ErrorCode::InvalidArgument, which + ": the array of input '" + t.name + "' is NULL");
      HostTensor h;
      h.shape = {1, channels, sample.height, sample.width};
      h.f32.assign(sample.inputs[i], sample.inputs[i] + h.element_count());
      inputs.push_back(std::move(h));
    }
    out.push_back(std::move(inputs));
  }
  return out;
}

denox_calibration calibrate(const void* onnx, size_t size, const std::optional<std::filesystem::path>& base_dir,
                            const denox_calibration_sample* samples, uint32_t count) {
  const auto model = import_model(onnx, size, base_dir, CompileRequest{});
  auto c = std::make_shared<autotune::Calibration>();
  c->model_hash = model->hash;
  c->samples = count;
  const autotune::CalibrationOptions options;
  c->percentile = options.percentile;
  c->table = autotune::calibrate_int8(model->graph, sample_tensors(model->graph, samples, count), options);
  return new denox_calibration_T{std::move(c)};
}

}  // namespace
}  // namespace denox::api

using namespace denox;

extern "C" {

denox_result denox_calibrate_file(const char* onnx_path, const denox_calibration_sample* samples, uint32_t sample_count,
                                  denox_calibration* out_calibration) {
  return api::guarded(__func__, [&] {
    api::require(out_calibration, "out_calibration");
    *out_calibration = nullptr;
    const std::filesystem::path path(api::require(onnx_path, "onnx_path"));
    const auto bytes = compiler::read_onnx_file(path);
    *out_calibration = api::calibrate(bytes.data(), bytes.size(), path.parent_path().empty() ? "." : path.parent_path(), samples,
                                      sample_count);
  });
}

denox_result denox_calibrate_memory(const void* onnx_bytes, size_t size, const denox_calibration_sample* samples, uint32_t sample_count,
                                    denox_calibration* out_calibration) {
  return api::guarded(__func__, [&] {
    api::require(out_calibration, "out_calibration");
    *out_calibration = nullptr;
    api::require(onnx_bytes, "onnx_bytes");
    *out_calibration = api::calibrate(onnx_bytes, size, std::nullopt, samples, sample_count);
  });
}

denox_result denox_calibration_save(denox_calibration calibration, void* data, size_t* size) {
  return api::guarded(__func__, [&] {
    api::require(size, "size");
    const std::string text = autotune::calibration_to_json(*api::require(calibration, "calibration")->data);
    if (data == nullptr) {
      *size = text.size();
      return;
    }
    if (*size < text.size())
      fail(ErrorCode::InvalidArgument, "the buffer holds " + std::to_string(*size) + " bytes, the calibration needs " +
                                           std::to_string(text.size()));
    std::memcpy(data, text.data(), text.size());
    *size = text.size();
  });
}

denox_result denox_calibration_load(const void* bytes, size_t size, denox_calibration* out_calibration) {
  return api::guarded(__func__, [&] {
    api::require(out_calibration, "out_calibration");
    *out_calibration = nullptr;
    api::require(bytes, "bytes");
    auto c = std::make_shared<autotune::Calibration>(autotune::calibration_from_json(bytes, size));
    *out_calibration = new denox_calibration_T{std::move(c)};
  });
}

const char* denox_calibration_model_hash(denox_calibration calibration) {
  return calibration != nullptr ? calibration->data->model_hash.c_str() : "";
}

void denox_calibration_destroy(denox_calibration calibration) { delete calibration; }

}  // extern "C"

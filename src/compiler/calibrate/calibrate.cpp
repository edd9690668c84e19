#include "compiler/calibrate/calibrate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "common/error.hpp"
#include "runtime/reference/reference_executor.hpp"

namespace denox::autotune {

namespace {

struct Observed {
  float min = std::numeric_limits<float>::infinity();
  std::vector<float> samples;
};

// The value at `percentile` of `v` (sorted in place; nearest rank).
float percentile_of(std::vector<float>& v, double percentile) {
  if (v.empty()) return 0.0f;
  const double rank = std::ceil(percentile / 100.0 * static_cast<double>(v.size())) - 1.0;
  const size_t k = static_cast<size_t>(std::clamp(rank, 0.0, static_cast<double>(v.size() - 1)));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

}  // namespace

kernels::QuantTable calibrate_int8(const compiler::Graph& graph, const std::vector<std::vector<HostTensor>>& samples,
                                   const CalibrationOptions& options) {
  if (samples.empty()) fail(ErrorCode::InvalidArgument, "int8 calibration needs at least one sample input");
  if (!(options.percentile > 0.0 && options.percentile <= 100.0) || options.samples_per_tensor == 0)
    fail(ErrorCode::InvalidArgument, "int8 calibration: the percentile must be in (0, 100] and the sample count positive");
  std::map<compiler::TensorId, Observed> seen;
  for (const std::vector<HostTensor>& inputs : samples) {
    auto observe = [&](compiler::TensorId t, const HostTensor& value) {
      if (value.is_int64 || value.f32.empty()) return;
      Observed& o = seen[t];
      for (float x : value.f32) {
        if (!std::isfinite(x))
          fail(ErrorCode::InvalidArgument, "int8 calibration: tensor '" + graph.tensor(t).name +
                                               "' takes a NaN or infinite value on a sample input");
        o.min = std::min(o.min, x);
      }
      const size_t stride = (value.f32.size() + options.samples_per_tensor - 1) / options.samples_per_tensor;
      for (size_t i = 0; i < value.f32.size(); i += stride) o.samples.push_back(value.f32[i]);
    };
    reference::run_reference(graph, inputs, observe);  // checks the inputs first
    for (size_t i = 0; i < inputs.size() && i < graph.inputs.size(); ++i) observe(graph.inputs[i], inputs[i]);
  }
  kernels::QuantTable table;
  for (auto& [t, o] : seen) {
    const bool negative = o.min < 0.0f;
    if (negative)
      for (float& x : o.samples) x = std::abs(x);
    const float hi = percentile_of(o.samples, options.percentile);
    table[graph.tensor(t).name] = kernels::quant_for_range(negative ? -hi : 0.0f, hi);
  }
  return table;
}

}  // namespace denox::autotune

#include "compiler/cost_model/cost_model.hpp"

#include <algorithm>

#include "common/error.hpp"
#include "runtime/bind_shapes.hpp"

namespace denox::autotune {

namespace {

// H100 figures (bench/RESULTS.md, 2026-11-23): what the families sustain on large layers.
constexpr double kCoopTflops = 130.0;      // conv2d_coopmat, big decoder convs
constexpr double kFmaTflops = 25.0;        // conv2d (portable)
constexpr double kBandwidthGBs = 2000.0;   // reads + writes
constexpr double kDispatchMs = 0.004;      // launch and pipeline drain per dispatch
// conv2d_coopmat with an NHWC input: the patch staged by 16-byte loads without a transpose
// (H100, the heuristic plan's configurations: 0.71-0.90x the NCHW time, bench/RESULTS.md,
// 2026-11-25). An NHWC output alone changed nothing measurable; its factor only breaks the tie.
constexpr double kCoopNhwcInput = 0.85;
constexpr double kCoopNhwcOutput = 0.99;
constexpr double kHeadHalo = 1.3;
// conv2d_coopmat_q8 between NHWC_Q8 tensors: 0.53-0.78x the time of the same data flow in fp16
// (bench/int8_probe on the H100, bench/RESULTS.md, 2026-11-26 third session).
constexpr double kCoopQ8 = 0.65;
// conv2d_coopmat_up2 with an int8 X0 (X0_Q8): int8 multiplies for the upsampled channels, fp16
// ones for the skip. Measured slower than fp16 on the H100 (OIDN balanced 1920x1088, heuristic
// configurations: dec_conv1a 0.446 ms against 0.409, dec_conv2a 0.253 against 0.221, dec_conv3a
// and 4a alike; bench/RESULTS.md, 2026-11-26 fifth session), so above 32 output channels the
// heuristic leaves it to measured tuning. With at most 32 it was the faster one: OIDN small's
// dec_conv1a (32 + 3 -> 32 channels, 16x16 one-phase tiles) took 0.167-0.172 ms against 0.198 at
// 1920x1088 and 0.077-0.080 against 0.091 at 1280x720 (bench/RESULTS.md, 2026-11-28), where
// balanced's (64 + 3 -> 64) stays in fp16 in every tuned plan. That is one layer on each side;
// the output channels stand in for what differs with them (X0's channels, the channel tile, the
// shared memory a workgroup takes). Both factors multiply the NHWC input's: the time relative to
// the NHWC fp16 conv.
constexpr double kCoopUp2Q8X0 = 1.1;
constexpr double kCoopUp2Q8X0Cout32 = 0.85;  // at most kUp2Q8X0MaxCout output channels
constexpr int64_t kUp2Q8X0MaxCout = 32;
// A conv of a narrow input (at most 12 channels, e.g. the image a denoiser's enc_conv0 reads) is
// bound by neither its multiplies nor its bytes but by each small workgroup's image loads and
// barriers: on the H100 OIDN's enc_conv0 at 1920x1088 took 0.095 ms with 3 channels (NARROW, one
// plane of slots) and 0.161-0.165 with 9 (three planes) where the rest of this model says 0.044
// and 0.087-0.090 (bench/RESULTS.md, 2026-11-27 third session). Left out, the int8 heuristic plan
// ran the 3-channel enc_conv0 apart (0.095 + int8 enc_conv1 0.156 ms) instead of in enc_conv1's
// HEAD (0.232). The difference, per output pixel: a fixed part and a part per 4 input channels.
// Every implementation of such a conv gets it (only the coop NARROW one was measured), so it
// changes no choice between them, only whether the conv runs on its own at all.
constexpr double kNarrowMsPerPixel = 1.9e-8;
constexpr double kNarrowPlaneMsPerPixel = 5.5e-9;

// In double: every use is, and the product of extents that each fit int64 need not (a Pad of
// 2^40 made it signed overflow; found by fuzzing).
double elements(const compiler::Graph& g, compiler::TensorId t, const std::vector<int64_t>& values) {
  double n = 1;
  for (compiler::ValueId v : g.tensor(t).shape) n *= static_cast<double>(std::max<int64_t>(values.at(v), 0));
  return n;
}

}  // namespace

std::optional<std::vector<int64_t>> values_at_extent(const compiler::Graph& graph, uint32_t width, uint32_t height) {
  std::vector<std::vector<int64_t>> shapes;
  for (compiler::TensorId t : graph.inputs) {
    const auto& shape = graph.tensor(t).shape;
    std::vector<int64_t> s;
    for (size_t a = 0; a < shape.size(); ++a) {
      if (graph.program.is_constant(shape[a])) s.push_back(graph.program.constant_value(shape[a]));
      else if (shape.size() >= 2 && a == shape.size() - 2) s.push_back(height);
      else if (shape.size() >= 2 && a == shape.size() - 1) s.push_back(width);
      else s.push_back(1);
    }
    shapes.push_back(std::move(s));
  }
  try {
    return runtime::bind_symbols(graph, shapes);
  } catch (const Error&) {
    return std::nullopt;
  }
}

double estimate_cost(const compiler::Graph& g, const kernels::Implementation& impl, plan::Precision precision,
                           const std::optional<std::vector<int64_t>>& values) {
  using Kind = kernels::Implementation::Kind;
  if (impl.kind == Kind::Free) return 0;
  if (!values) return impl.dispatches + (impl.kind == Kind::PortableConv ? 1.0 : 0.0);
  const double elem = plan::element_size(precision);
  // An NHWC_Q8 tensor takes a byte per element (a conversion's other side, the float one, elem).
  auto bytes_of = [&](kernels::Layout l) { return l == kernels::Layout::NHWC_Q8 ? 1.0 : elem; };
  double bytes = 0;
  for (size_t i = 0; i < impl.inputs.size(); ++i) bytes += bytes_of(impl.input_layout(i)) * elements(g, impl.inputs[i], *values);
  bytes += bytes_of(impl.output_layout) * elements(g, impl.output, *values);
  double flops = 0, tflops = kFmaTflops, narrow_ms = 0;
  if (impl.kind == Kind::PortableConv || impl.kind == Kind::CoopConv) {
    const compiler::Op& conv = *impl.anchor;
    const compiler::TensorId w = conv.inputs.at(1);
    const double weights = elements(g, w, *values);
    bytes += (impl.kind == Kind::CoopConv && impl.coop.config.q8 ? 1.0 : elem) * weights;
    // 2 * Cout * Cin * KH * KW per output pixel of the convolution itself (before any pool).
    const auto& out = g.tensor(conv.output).shape;
    const double pixels = out.size() == 4 ? static_cast<double>(values->at(out[0])) * static_cast<double>(values->at(out[2])) *
                                                static_cast<double>(values->at(out[3]))
                                          : 1.0;  // (in double, as elements())
    flops = 2.0 * weights * pixels;
    // conv2d_coopmat_up2: the upsampled channels take 4 taps instead of 9, but the kernel is
    // bound by staging and stores more than by its multiplies, so it gains half of that: time
    // ratios of 0.71-1.0 against the plain fp16 conv where the multiplies' ratio was 0.56-0.67
    // (bench/RESULTS.md 2026-11-24 evening); with no multiply at all dec_conv1a still took 0.285
    // of its 0.404 ms (2026-11-26, the up2 ablation). Costed at the full ratio, the heuristic
    // kept dec_conv2a-4a in fp16 up2 where the plain int8 conv, with the same upsample and
    // concat fused, ran 0.69-0.89x its time (2026-11-26 fifth session, 2026-11-27).
    // conv2d_coopmat_q8 by output phase (its up2) gets the same count; on the H100 it ran dec_conv2a-4a
    // in 0.88-0.94x the plain int8 conv's time (2026-11-27 fourth session), so the count only has to
    // order the two.
    if (impl.kind == Kind::CoopConv && impl.coop.config.up2 && impl.fusion.upsample) {
      const auto& ws = g.tensor(w).shape;
      const double c_in = static_cast<double>(values->at(ws.at(1)));
      const double c_up = static_cast<double>(values->at(g.tensor(impl.fusion.upsample->inputs.at(0)).shape.at(1)));
      if (c_in > 0) flops *= 0.5 * (1.0 + (4.0 * c_up + 9.0 * (c_in - c_up)) / (9.0 * c_in));
    }
    // A tail conv (conv2d_coopmat's TAIL): its tap-sum GEMM over the first conv's pixels.
    if (impl.fusion.tail) {
      const double tail_weights = elements(g, impl.fusion.tail->inputs.at(1), *values);
      bytes += elem * tail_weights;
      flops += 2.0 * tail_weights * pixels;
    }
    // A head conv (conv2d_coopmat's HEAD): its GEMM over the conv's input pixels, a third more
    // for the patches' halos (8x64 tiles: 10 x 67 positions per 8 x 64), computed into the patch
    // as an NHWC input would be staged (no transpose).
    if (impl.fusion.head) {
      const double head_weights = elements(g, impl.fusion.head->inputs.at(1), *values);
      bytes += elem * head_weights;
      flops += 2.0 * head_weights * pixels * kHeadHalo;
    }
    if (const int64_t c_in = values->at(g.tensor(w).shape.at(1)); c_in <= 12 && !impl.fusion.concat && !impl.fusion.upsample)
      narrow_ms = pixels * (kNarrowMsPerPixel + kNarrowPlaneMsPerPixel * static_cast<double>((c_in + 3) / 4));
    // COOP_EMULATE (tests) is costed as the real thing: it stands in for it, plan and all.
    if (impl.kind == Kind::CoopConv && impl.coop.config.q8) {
      tflops = kCoopTflops / kCoopQ8;
    } else if (impl.kind == Kind::CoopConv) {
      tflops = kCoopTflops;
      if (impl.input_layout(0) == kernels::Layout::NHWC || impl.fusion.head) tflops /= kCoopNhwcInput;
      if (impl.input_layout(0) == kernels::Layout::NHWC_Q8) {
        const int64_t c_out = values->at(g.tensor(w).shape.at(0));
        tflops /= kCoopNhwcInput * (c_out <= kUp2Q8X0MaxCout ? kCoopUp2Q8X0Cout32 : kCoopUp2Q8X0);
      }
      if (impl.output_layout == kernels::Layout::NHWC) tflops /= kCoopNhwcOutput;
    }
  }
  // The FMA convolution re-reads its input patch once per output-channel tile (the coop one
  // holds every output channel of a layer up to 128 in one tile): 10% more traffic, which also
  // breaks the tie in favour of cooperative matrices on memory-bound layers.
  if (impl.kind == Kind::PortableConv) bytes *= 1.1;
  return std::max(flops / (tflops * 1e9), bytes / (kBandwidthGBs * 1e6)) + narrow_ms + kDispatchMs * impl.dispatches;
}

}  // namespace denox::autotune

// The cooperative-matrix convolution family (shaders/conv2d_coopmat.comp, src/kernels/conv2d_coopmat.*):
//  - [coop-plan]: weight packing and plan structure, no device.
//  - [coop-emulate]: the family's data flow with COOP_EMULATE=1 (plain arithmetic in place of
//    the matrix operations) on any device, lavapipe included, against the CPU reference: the
//    staging, halo, channel masking, weight layout, epilogue and fusions are checked on every
//    CI run even though lavapipe has no cooperative matrices.
//  - [coop]: the real thing on a device with cooperative matrices (skipped with a warning
//    elsewhere): every configuration the heuristic or the benchmark's sweep can use, fused and
//    unfused, and the whole OIDN U-Net, against the CPU reference at odd sizes.
//  - [.][coop-bench] (hidden): per-layer and end-to-end timings of OIDN balanced
//    (bench/conv_layers.md says how to run it; DENOX_BENCH_SIZE, DENOX_BENCH_SWEEP=0|1).
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>

#include "../runtime/gpu_test_support.hpp"
#include "coop_support.hpp"
#include "common/error.hpp"
#include "compiler/import/onnx_import.hpp"
#include "compiler/plan/plan_serialize.hpp"
#include "compiler/schedule/schedule.hpp"
#include "kernels/shader_compiler.hpp"
#include "graph_builder.hpp"
#include "kernels/conv2d_coopmat.hpp"
#include "kernels/lower_portable.hpp"
#include "kernels/lowering_target.hpp"
#include "modelgen/oidn_unet.hpp"
#include "runtime/reference/reference_executor.hpp"
#include "runtime/vulkan/vk_check.hpp"

using namespace denox;
using namespace denox::compiler;
using namespace denox::kernels;
using namespace denox::testing;

namespace {

int nhwc_dispatches(const plan::Plan& plan);

// Random inputs for every graph input at the H and W symbol values h, w.
std::vector<HostTensor> inputs_for(const GraphBuilder& b, int64_t h, int64_t w, uint64_t seed) { return random_graph_inputs(b, h, w, seed); }

// Worst relative L2 of the outputs against the CPU reference (infinity on NaN).
double error_on(const runtime::DeviceContext& ctx, const compiler::Graph& g, const LoweringTarget& target,
                const std::vector<HostTensor>& inputs, int* coop_dispatches = nullptr,
                plan::Precision precision = plan::Precision::F16, size_t* dispatches = nullptr, int* up2_dispatches = nullptr,
                int* nhwc = nullptr, int* tail_rings = nullptr) {
  plan::Plan plan = compile(g, precision, target);
  if (tail_rings) *tail_rings = families(plan)["conv_tail_ring"];
  if (nhwc) *nhwc = nhwc_dispatches(plan);
  if (coop_dispatches) *coop_dispatches = testing::coop_dispatches(plan);
  if (up2_dispatches) *up2_dispatches = families(plan)["conv2d_coopmat_up2"];
  if (dispatches) *dispatches = plan.dispatches.size();
  const auto expected = reference::run_reference(g, inputs);
  const auto actual = run_on(ctx, std::move(plan), inputs);
  double worst = 0;
  for (size_t i = 0; i < expected.size(); ++i) worst = std::max(worst, relative_l2(actual.at(i), expected[i]));
  return worst;
}

ActivationAttrs relu() { return ActivationAttrs{}; }
// A 2x2 max-pool of stride 2 (pads and ceil mode are GraphBuilder::pool's arguments).
PoolAttrs max_pool_2x2() {
  PoolAttrs p;
  p.kernel = {2, 2};
  p.stride = {2, 2};
  return p;
}
ActivationAttrs sigmoid() {
  ActivationAttrs a;
  a.kind = Activation::Sigmoid;
  return a;
}

// A zero Pad of the spatial axes: begin h, begin w, end h, end w.
PadAttrs zero_pad(GraphBuilder& b, std::array<int64_t, 4> pads) {
  PadAttrs a;
  a.begin = {b.c(0), b.c(0), b.c(pads[0]), b.c(pads[1])};
  a.end = {b.c(0), b.c(0), b.c(pads[2]), b.c(pads[3])};
  return a;
}

// The graphs both the emulated and the real tests run (odd sizes, channel counts that are not
// multiples of 16, every fusion).
struct Case {
  std::string name;
  GraphBuilder b;
  int64_t h, w;
  int expected_coop;           // coop dispatches in the plan (= convolutions)
  size_t expected_dispatches;  // all dispatches, every fusion taken
  int upsampled = 0;           // convs of an upsample (conv2d_coopmat_up2 unless a plain config is forced)
  bool nhwc = false;           // the coop plans keep tensors between convs NHWC (every conv reads or writes one)
  int tails = 0;               // convs with a tail conv in their epilogue (conv_tail_ring dispatches) in coop plans
  int heads = 0;               // convs with the conv before them in their prologue (HEAD) in coop plans
};

std::vector<Case> cases() {
  std::vector<Case> all;
  {
    Case c{"3x3 19->37 bias relu (width a multiple of 4: the vector paths)", {}, 37, 52, 1, 1};
    const TensorId x = c.b.input("x", 19);
    c.b.output(c.b.activation("relu", c.b.conv("conv", x, 37, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 7), relu()));
    all.push_back(std::move(c));
  }
  {
    Case c{"1x1 5->9 leaky, 1x1 9->17, 3x3 no pad 17->3 tanh (no bias), 1x1 5->3, 3x3 3->8 clip (odd width: scalar paths)", {}, 29, 41, 5, 5};
    const TensorId x = c.b.input("x", 5);
    ActivationAttrs leaky;
    leaky.kind = Activation::LeakyRelu;
    leaky.alpha = 0.1f;
    const TensorId a = c.b.activation("leaky", c.b.conv("pw", x, 9, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, 11), leaky);
    c.b.output(a);
    const TensorId x2 = c.b.conv("widen", a, 17, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, 12);
    ActivationAttrs tanh_a;
    tanh_a.kind = Activation::Tanh;
    c.b.output(c.b.activation("tanh", c.b.conv("valid", x2, 3, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}, false, 13), tanh_a));
    ActivationAttrs clip;
    clip.kind = Activation::Clip;
    clip.min = -0.25f, clip.max = 0.5f;
    c.b.output(c.b.activation("clip", c.b.conv("small", c.b.conv("three", x, 3, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, 14), 8,
                                                     {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 15),
                              clip));
    all.push_back(std::move(c));
  }
  {
    Case c{"3x3 13->24 relu + 2x2 max-pool (floor and ceil_mode)", {}, 37, 53, 2, 2};
    const TensorId x = c.b.input("x", 13);
    const PoolAttrs p = max_pool_2x2();
    const TensorId r = c.b.activation("relu", c.b.conv("conv", x, 24, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 21), relu());
    c.b.output(c.b.pool("pool", r, p, {0, 0, 0, 0}, false));
    const TensorId r2 = c.b.activation("relu2", c.b.conv("conv2", x, 8, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 22), relu());
    c.b.output(c.b.pool("pool_ceil", r2, p, {0, 0, 0, 0}, true));
    all.push_back(std::move(c));
  }
  {
    // The runtime gives every input the same extent, so the low-resolution tensor is made in the
    // graph (a max-pool of the first input); H and W even so that the upsample restores them.
    Case c{"nearest 2x upsample of 20 ch + concat 3 ch + 3x3 conv 23->16 relu; upsample + conv 20->32", {}, 38, 52, 2, 3};
    const TensorId x = c.b.input("x", 20);
    const TensorId skip = c.b.input("skip", 3);
    const PoolAttrs p = max_pool_2x2();
    const TensorId lo = c.b.pool("lo", x, p, {0, 0, 0, 0}, false);
    const std::vector<ValueId> big = {c.b.c(1), c.b.c(20), c.b.g.program.mul(c.b.shape(lo)[2], c.b.c(2)),
                                      c.b.g.program.mul(c.b.shape(lo)[3], c.b.c(2))};
    UpsampleAttrs up;
    const TensorId u = c.b.op("up", "Resize", up, {lo}, big);
    const TensorId cat = c.b.op("cat", "Concat", ConcatAttrs{1}, {u, skip}, {c.b.c(1), c.b.c(23), big[2], big[3]});
    c.b.output(c.b.activation("relu", c.b.conv("conv", cat, 16, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 31), relu()));
    const TensorId u2 = c.b.op("up2", "Resize", up, {lo}, big);
    c.b.output(c.b.conv("conv_up", u2, 32, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 32));
    c.upsampled = 2;
    all.push_back(std::move(c));
  }
  {
    // Zero Pads read through: one read by a conv and by a concat's second input (as OIDN's
    // pad-to-16 is), one with begin pads before a conv without padding; and a crop of two
    // Slices after the last conv. The Pads are never computed.
    Case c{"pad + conv 7->8 relu, concat with the pad + conv 15->5 relu + 2-Slice crop, pad(2,1) + valid conv 7->4", {}, 35, 41, 3, 3};
    GraphBuilder& b = c.b;
    const TensorId x = b.input("x", 7);
    const ValueId h = b.shape(x)[2], w = b.shape(x)[3];
    const ValueId h2 = b.add(h, b.c(2)), w2 = b.add(w, b.c(3));
    const TensorId px = b.op("pad_x", "Pad", zero_pad(b, {0, 0, 2, 3}), {x}, {b.c(1), b.c(7), h2, w2});
    const TensorId a = b.activation("relu_a", b.conv("conv_a", px, 8, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 41), relu());
    const TensorId cat = b.op("cat", "Concat", ConcatAttrs{1}, {a, px}, {b.c(1), b.c(15), h2, w2});
    const TensorId r = b.activation("relu_cat", b.conv("conv_cat", cat, 5, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 42), relu());
    b.crop_output(r, 5, 1, 2, h, w2, h, w);
    const TensorId pb = b.op("pad_begin", "Pad", zero_pad(b, {2, 1, 1, 3}), {x}, {b.c(1), b.c(7), b.add(h, b.c(3)), b.add(w, b.c(4))});
    b.output(b.conv("conv_valid", pb, 4, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, 43));
    all.push_back(std::move(c));
  }
  for (int64_t w : {46, 52}) {
    // Channel counts that are multiples of 8 between convs: the coop plans keep them NHWC
    // (the input 3 and the output 5 stay NCHW). conv_up reads an upsampled 24-channel NHWC tensor
    // concatenated with an 8-channel NHWC one (its second chunk straddles the two: channels
    // 16..23 of X0, 0..7 of X1); conv_out an NHWC 16-channel tensor concatenated with the NCHW
    // input. Width 46: the NCHW reads take the scalar path; 52: the vector one.
    Case c{"NHWC between convs: 3->16 (NCHW in), 16->8, 16->24 + pool, up + concat 24+8 -> 16, concat 16+3 -> 5 (NCHW out), width " +
               std::to_string(w),
           {}, 38, w, 5, 5};
    GraphBuilder& b = c.b;
    const TensorId x = b.input("x", 3);
    const PoolAttrs p = max_pool_2x2();
    const TensorId a = b.activation("relu_a", b.conv("conv_a", x, 16, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 51), relu());
    const TensorId e8 = b.activation("relu_e", b.conv("conv_e", a, 8, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 52), relu());
    const TensorId r24 = b.activation("relu_p", b.conv("conv_p", a, 24, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 53), relu());
    const TensorId pooled = b.pool("pool", r24, p, {0, 0, 0, 0}, false);
    // As above: the upsample's extents are twice the pooled ones (equal to the input's at even
    // sizes), so the lowering can check them.
    const ValueId h = b.g.program.mul(b.shape(pooled)[2], b.c(2)), wv = b.g.program.mul(b.shape(pooled)[3], b.c(2));
    UpsampleAttrs up;
    const TensorId u = b.op("up", "Resize", up, {pooled}, {b.c(1), b.c(24), h, wv});
    const TensorId cat = b.op("cat", "Concat", ConcatAttrs{1}, {u, e8}, {b.c(1), b.c(32), h, wv});
    const TensorId cu = b.activation("relu_up", b.conv("conv_up", cat, 16, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 54), relu());
    const TensorId cat2 = b.op("cat2", "Concat", ConcatAttrs{1}, {cu, x}, {b.c(1), b.c(19), h, wv});
    b.output(b.conv("conv_out", cat2, 5, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 55));
    c.upsampled = 1;
    c.nhwc = true;
    all.push_back(std::move(c));
  }
  for (int64_t w : {47, 44}) {
    // NARROW planes: 9 to 12 input channels as planes of 4-channel slots, one chunk each (the
    // last partial); a 3x3 conv and a 1x5 one without padding; and 6 channels as one chunk of
    // 8-channel one-pixel slots (NARROW=1). Two widths: 47 (the other NCHW staging paths scalar)
    // and 44 (theirs vector; the widths OIDN runs at).
    Case c{"narrow planes: 3x3 11->21 relu, 1x5 valid 9->7, 3x3 6->17, width " + std::to_string(w), {}, 33, w, 3, 3};
    const TensorId x = c.b.input("x", 11);
    c.b.output(c.b.activation("relu", c.b.conv("conv11", x, 21, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 81), relu()));
    const TensorId x9 = c.b.input("x9", 9);
    // (7 outputs: 35 taps x outputs, past conv2d_coopmat_tapsum's 32.)
    c.b.output(c.b.conv("conv9", x9, 7, {1, 5}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, 82));
    const TensorId x6 = c.b.input("x6", 6);
    c.b.output(c.b.conv("conv6", x6, 17, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 83));
    all.push_back(std::move(c));
  }
  {
    // One-phase up2 skips beyond one plane of 4-channel slots: a 9-channel NCHW graph input
    // (OIDN's color + albedo + normal, dec_conv1a's skip: 3 planes) and a 56-channel NHWC tensor
    // in row steps (SKIP_ROWS: four chunks, the last partial). Low resolution 17x22: partial
    // tiles in both directions; width 44: the NCHW vector path. (Channel counts that make every
    // conv compute-bound in the cost model, and graph inputs that cannot be NHWC, so that the
    // tensors between convs are NHWC.)
    Case c{"wide skips: 3->32 relu + pool, up + concat 9-ch input -> 21 relu, 9->56 relu, up + concat 56 ch -> 13", {}, 34, 44, 4, 4};
    GraphBuilder& b = c.b;
    const TensorId x = b.input("x", 3);
    const TensorId skip = b.input("skip", 9);
    const PoolAttrs p = max_pool_2x2();
    const TensorId a = b.activation("relu_lo", b.conv("conv_lo", x, 32, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 71), relu());
    const TensorId lo = b.pool("pool", a, p, {0, 0, 0, 0}, false);
    const ValueId h = b.g.program.mul(b.shape(lo)[2], b.c(2)), w = b.g.program.mul(b.shape(lo)[3], b.c(2));
    UpsampleAttrs up;
    const TensorId u = b.op("up", "Resize", up, {lo}, {b.c(1), b.c(32), h, w});
    const TensorId cat = b.op("cat", "Concat", ConcatAttrs{1}, {u, skip}, {b.c(1), b.c(41), h, w});
    b.output(b.activation("relu_9", b.conv("conv_skip9", cat, 21, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 72), relu()));
    const TensorId s56 = b.activation("relu_s", b.conv("conv_s", skip, 56, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 73), relu());
    const TensorId u2 = b.op("up2", "Resize", up, {lo}, {b.c(1), b.c(32), h, w});
    const TensorId cat2 = b.op("cat2", "Concat", ConcatAttrs{1}, {u2, s56}, {b.c(1), b.c(88), h, w});
    b.output(b.conv("conv_skip56", cat2, 13, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 74));
    c.upsampled = 2;
    c.nhwc = true;
    all.push_back(std::move(c));
  }
  {
    // Tap-sum candidates (conv2d_coopmat_tapsum: kh * kw * c_out <= 64): a 3-channel conv with a
    // zero Pad before it and a 2-Slice crop after it (OIDN's last conv), and a 2-channel one
    // without bias (odd width: the patch rows cross tile rows anywhere). The cost model keeps
    // these memory-bound tensors NCHW; the U-Net test below reads an NHWC one.
    Case c{"tap-sum: 3->16 relu (NHWC), pad + 3x3 16->3 + 2-Slice crop, 3x3 16->2 sigmoid (no bias)", {}, 33, 43, 3, 3};
    GraphBuilder& b = c.b;
    const TensorId x = b.input("x", 3);
    const ValueId h = b.shape(x)[2], w = b.shape(x)[3];
    const TensorId a = b.activation("relu_a", b.conv("conv_a", x, 16, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 71), relu());
    const PadAttrs pad = zero_pad(b, {0, 0, 3, 2});
    const TensorId pa = b.op("pad", "Pad", pad, {a}, {b.c(1), b.c(16), b.add(h, b.c(3)), b.add(w, b.c(2))});
    const TensorId o = b.conv("conv_out", pa, 3, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 72);
    b.crop_output(o, 3, 2, 1, b.add(h, b.c(1)), b.add(w, b.c(2)), b.add(h, b.c(1)), b.add(w, b.c(1)));
    b.output(b.activation("sig", b.conv("conv_two", a, 2, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, false, 73), sigmoid()));
    all.push_back(std::move(c));
  }
  {
    // Tails (conv2d_coopmat TAIL + conv_tail_ring): a conv whose activated output alone feeds a
    // 3x3 conv of few channels gets that conv in its epilogue. A 3-channel tail with a bias and
    // a 2-Slice crop (OIDN's last conv; 24 channels: a partial K fragment of the tail), and a
    // 2-channel one without bias, with its own activation, after a 1x1 conv (odd width, tile
    // borders and image borders in every position).
    Case c{"tails: 5->24 relu -> 3x3 24->3 + 2-Slice crop, 1x1 5->16 relu -> 3x3 16->2 sigmoid (no bias)", {}, 35, 47, 2, 4};
    GraphBuilder& b = c.b;
    const TensorId x = b.input("x", 5);
    const ValueId h = b.shape(x)[2], w = b.shape(x)[3];
    const TensorId a = b.activation("relu_a", b.conv("conv_a", x, 24, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 81), relu());
    const TensorId o = b.conv("conv_tail", a, 3, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 82);
    b.crop_output(o, 3, 3, 2, b.add(h, b.c(-4)), w, b.add(h, b.c(-4)), b.add(w, b.c(-5)));
    const TensorId e = b.activation("relu_e", b.conv("conv_e", x, 16, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, 83), relu());
    b.output(b.activation("sig", b.conv("conv_tail2", e, 2, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, false, 84), sigmoid()));
    c.tails = 2;
    all.push_back(std::move(c));
  }
  for (int64_t width : {45, 44}) {
    // Heads (conv2d_coopmat HEAD): a conv reading an image of at most 4 channels whose activated
    // output alone feeds the next conv runs in that conv's prologue. A 3-channel image through a
    // zero Pad (2 rows, 3 columns at the end) -> 3x3 3->24 relu -> 3x3 24->32 relu + 2x2 max-pool
    // (ceil_mode: odd padded height); a 4-channel one -> 3x3 4->16 (no bias, no activation) ->
    // 3x3 16->19 leaky (19 channels: a partial output tile). Width 45: patches cross the image
    // edges in every position; 44: rows of a multiple of 4 pixels, as OIDN's (the conv's own
    // staging takes its vector path).
    Case c{"heads: pad + 3x3 3->24 relu -> 3x3 24->32 relu + ceil pool, 3x3 4->16 -> 3x3 16->19 leaky, width " + std::to_string(width),
           {}, 35, width, 2, 4};
    GraphBuilder& b = c.b;
    const TensorId x = b.input("x", 3);
    const TensorId y = b.input("y", 4);
    const ValueId h = b.shape(x)[2], w = b.shape(x)[3];
    const PadAttrs pad = zero_pad(b, {0, 0, 2, 3});
    const TensorId px = b.op("pad", "Pad", pad, {x}, {b.c(1), b.c(3), b.add(h, b.c(2)), b.add(w, b.c(3))});
    const TensorId a = b.activation("relu_h", b.conv("head", px, 24, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 91), relu());
    const TensorId m = b.activation("relu_m", b.conv("main", a, 32, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 92), relu());
    const PoolAttrs p = max_pool_2x2();
    b.output(b.pool("pool", m, p, {0, 0, 0, 0}, true));
    ActivationAttrs leaky;
    leaky.kind = Activation::LeakyRelu;
    leaky.alpha = 0.2f;
    const TensorId e = b.conv("head2", y, 16, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, false, 93);
    b.output(b.activation("leaky", b.conv("main2", e, 19, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 94), leaky));
    c.heads = 2;
    all.push_back(std::move(c));
  }
  for (int64_t width : {37, 36}) {
    // A head of three chunks whose activation is not 0 at 0 (sigmoid: the padded channels hold
    // 0.5, which the conv's zero weights must cancel), read through a Pad with begin pads, and a
    // 2-Slice crop after the headed conv; at two widths as above.
    Case c{"head: pad(1,2) + 3x3 3->40 sigmoid -> 3x3 40->16 relu + 2-Slice crop, width " + std::to_string(width), {}, 29, width, 1, 2};
    GraphBuilder& b = c.b;
    const TensorId x = b.input("x", 3);
    const ValueId h = b.shape(x)[2], w = b.shape(x)[3];
    const PadAttrs pad = zero_pad(b, {1, 2, 0, 1});
    const ValueId ph = b.add(h, b.c(1)), pw = b.add(w, b.c(3));
    const TensorId px = b.op("pad", "Pad", pad, {x}, {b.c(1), b.c(3), ph, pw});
    const TensorId a = b.activation("sig_h", b.conv("head", px, 40, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 95), sigmoid());
    const TensorId m = b.activation("relu_m", b.conv("main", a, 16, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 96), relu());
    b.crop_output(m, 16, 1, 2, h, pw, h, w);
    c.heads = 1;
    all.push_back(std::move(c));
  }
  return all;
}

// How many coop pipelines of a plan read or write an NHWC tensor.
int nhwc_dispatches(const plan::Plan& plan) {
  int n = 0;
  for (const auto& d : plan.dispatches) {
    const auto& p = plan.pipelines[d.pipeline];
    n += define(p, "X0_HWC") == "1" || define(p, "X1_HWC") == "1" || define(p, "Y_HWC") == "1";
  }
  return n;
}

// Configurations beyond the heuristic's that the tests force (each where it fits): the tile,
// N, chunk, subgroup grid, coop N and accumulator corners of the space.
std::vector<CoopConvConfig> forced_configs() {
  std::vector<CoopConvConfig> v;
  auto add = [&](int64_t th, int64_t tw, int64_t nt, int64_t ck, int64_t sg_m, int64_t sg_n, int64_t cm_n, bool f16, bool bg) {
    CoopConvConfig c;
    c.tile_h = th, c.tile_w = tw, c.nt = nt, c.ck = ck, c.sg_m = sg_m, c.sg_n = sg_n, c.cm_n = cm_n, c.acc_f16 = f16;
    c.b_global = bg;
    v.push_back(c);
  };
  add(4, 16, 16, 16, 2, 1, 8, true, true);
  add(4, 32, 16, 32, 4, 1, 16, false, false);
  add(16, 16, 64, 16, 4, 2, 16, true, false);
  add(2, 32, 48, 16, 4, 1, 16, false, true);
  add(4, 64, 64, 16, 4, 2, 16, true, true);
  add(4, 64, 16, 16, 16, 1, 16, true, false);  // 16 subgroups (512 invocations)
  add(4, 32, 32, 16, 2, 2, 8, true, false);   // 4 subgroups
  // Winners of the H100's exhaustive tuning (bench/RESULTS.md), 16 and 32 subgroups.
  add(8, 64, 32, 16, 16, 1, 16, true, false);
  add(4, 64, 64, 16, 8, 2, 16, true, false);
  add(8, 32, 48, 16, 8, 2, 8, true, false);
  add(8, 64, 32, 16, 32, 1, 16, true, false);
  add(4, 64, 64, 16, 16, 2, 16, true, false);
  // conv2d_coopmat_up2 (phase-decomposed upsampled convs; forcing one keeps conv2d_coopmat off
  // the upsampled convs): two output-channel tiles, fp32 accumulation, 8 and 16 subgroups.
  auto up2 = [&](int64_t th, int64_t tw, int64_t nt, int64_t sg_m, int64_t sg_n, int64_t cm_n, bool f16) {
    add(th, tw, nt, 16, sg_m, sg_n, cm_n, f16, false);
    v.back().up2 = true;
  };
  up2(4, 32, 8, 4, 1, 8, false);   // index 12
  up2(4, 32, 16, 4, 2, 8, true);   // index 13
  up2(4, 64, 64, 8, 2, 16, true);
  up2(8, 64, 32, 16, 1, 16, true);
  up2(8, 32, 48, 8, 1, 16, false);
  // One output phase per workgroup (tiles of the low-resolution grid; skips of <= 4 channels).
  up2(4, 16, 16, 4, 1, 8, false);  // index 17
  v.back().one_phase = true;
  up2(8, 16, 64, 4, 2, 16, true);  // the H100's dec_conv1a winner
  v.back().one_phase = true;
  up2(16, 16, 32, 8, 2, 8, true);
  v.back().one_phase = true;
  add(4, 16, 16, 32, 4, 1, 8, true, false);  // index 20: one phase, 32-channel chunks
  v.back().up2 = v.back().one_phase = true;
  // conv2d_coopmat_tapsum (convs with kh * kw * c_out <= nt, no pool, concat or upsample): 32- and
  // 16-channel chunks, fp16 and fp32 accumulators, and a patch of 7 fragments on 2 subgroups
  // (the second's last fragment is past the patch).
  add(8, 32, 32, 32, 8, 1, 16, true, false);  // index 21
  v.back().tap_sum = true;
  add(4, 16, 64, 16, 2, 1, 8, false, false);  // index 22
  v.back().tap_sum = true;
  // One phase with the epilogue in channel passes (EPI_PASSES), every pass real channels of the
  // 32-channel conv_up: 2 passes of one fragment column each on 4x2 subgroups, and 4 passes of one
  // of each subgroup's 4 fragments (8x1, 16x8x16, fp32).
  up2(16, 16, 32, 4, 2, 16, true);  // index 23
  v.back().one_phase = true, v.back().epi_passes = 2;
  up2(8, 16, 32, 8, 1, 8, false);  // index 24
  v.back().one_phase = true, v.back().epi_passes = 4;
  // A head's tile with 16x8x16 fragments (two head N fragments per chunk) and fp32 accumulators.
  add(8, 32, 32, 16, 8, 1, 8, false, false);  // index 25
  return v;
}

}  // namespace

TEST_CASE("coop weight packing: co_tile x chunk x tap x ck x nt blocks with zeros past Cin and Cout", "[kernels][coop-plan]") {
  const Conv2dShape s{19, 37, 3, 3};
  CoopConvConfig c;
  c.nt = 32, c.ck = 16;
  const std::vector<float> w = random_values(static_cast<size_t>(37 * 19 * 9), 3);
  const std::vector<float> packed = pack_coop_weights(w, s, c);
  const int64_t co_tiles = 2, chunks = 2;
  REQUIRE(packed.size() == static_cast<size_t>(co_tiles * chunks * 9 * 16 * 32));
  size_t nonzero = 0;
  for (int64_t tile = 0; tile < co_tiles; ++tile)
    for (int64_t chunk = 0; chunk < chunks; ++chunk)
      for (int64_t tap = 0; tap < 9; ++tap)
        for (int64_t k = 0; k < 16; ++k)
          for (int64_t j = 0; j < 32; ++j) {
            const int64_t co = tile * 32 + j, ci = chunk * 16 + k;
            const float got = packed[static_cast<size_t>((((tile * chunks + chunk) * 9 + tap) * 16 + k) * 32 + j)];
            const float want = co < 37 && ci < 19 ? w[static_cast<size_t>((co * 19 + ci) * 9 + tap)] : 0.0f;
            REQUIRE(got == want);
            nonzero += got != 0.0f;
          }
  CHECK(nonzero == w.size());

  // B read from the buffer (b_global): each tap's block column-major, [nt][ck].
  c.b_global = true;
  const std::vector<float> cols = pack_coop_weights(w, s, c);
  REQUIRE(cols.size() == packed.size());
  for (int64_t block = 0; block < co_tiles * chunks * 9; ++block)
    for (int64_t k = 0; k < 16; ++k)
      for (int64_t j = 0; j < 32; ++j)
        REQUIRE(cols[static_cast<size_t>((block * 32 + j) * 16 + k)] == packed[static_cast<size_t>((block * 16 + k) * 32 + j)]);
}

TEST_CASE("coop narrow packing: taps packed into K (8-half slots read two per A row) give the direct conv", "[kernels][coop-plan]") {
  struct Narrow {
    int64_t c_in, kh, kw, narrow;
  };
  // (9 to 12 channels: planes of 4, one chunk each.)
  for (const Narrow& n : {Narrow{3, 3, 3, 2}, Narrow{4, 3, 3, 2}, Narrow{1, 1, 1, 2}, Narrow{2, 3, 5, 2}, Narrow{6, 3, 3, 1},
                          Narrow{8, 1, 1, 1}, Narrow{5, 2, 7, 1}, Narrow{9, 3, 3, 2}, Narrow{12, 3, 3, 2}, Narrow{11, 1, 5, 2}}) {
    const Conv2dShape s{n.c_in, 11, n.kh, n.kw};
    CoopConvConfig c;
    c.nt = 16;
    INFO("c_in " << n.c_in << ", " << n.kh << "x" << n.kw);
    REQUIRE(coop_narrow(s, c, true) == n.narrow);
    CHECK(coop_narrow(s, c, false) == 0);
    const std::vector<float> w = random_values(static_cast<size_t>(11 * n.c_in * n.kh * n.kw), 5);
    const std::vector<float> packed = pack_coop_weights(w, s, c, n.narrow);
    const int64_t step = n.narrow == 2 ? 3 : 2, ksx = (n.kw + step - 1) / step, per_pixel = 8 / n.narrow;
    const int64_t planes = (n.c_in + per_pixel - 1) / per_pixel;
    REQUIRE(packed.size() == static_cast<size_t>(planes * n.kh * ksx * 16 * 16));
    // One output pixel (patch column 0) over patch rows of kw + 4 pixels x 16 channels, every
    // value random (also past the kernel and past c_in: their weights must be zero).
    const int64_t cols = n.kw + 4;
    const std::vector<float> x = random_values(static_cast<size_t>(n.kh * cols * 16), 6);
    auto at = [&](int64_t ky, int64_t px, int64_t ci) { return x[static_cast<size_t>((ky * cols + px) * 16 + ci)]; };
    for (int64_t co = 0; co < 16; ++co) {
      double direct = 0, packed_sum = 0;
      if (co < 11)
        for (int64_t ci = 0; ci < n.c_in; ++ci)
          for (int64_t ky = 0; ky < n.kh; ++ky)
            for (int64_t kx = 0; kx < n.kw; ++kx) direct += w[static_cast<size_t>(((co * n.c_in + ci) * n.kh + ky) * n.kw + kx)] * at(ky, kx, ci);
      // As the shader multiplies: A row = slots (step * ks) and (step * ks + 1) of patch row ky
      // of plane p; slot sx holds pixel sx (and, narrow 2, pixel sx + 1), the plane's per_pixel
      // channels each.
      for (int64_t p = 0; p < planes; ++p)
        for (int64_t ky = 0; ky < n.kh; ++ky)
          for (int64_t ks = 0; ks < ksx; ++ks)
            for (int64_t k = 0; k < 16; ++k) {
              const int64_t sx = step * ks + k / 8, q = k % 8 / per_pixel, ci = p * per_pixel + k % per_pixel;
              packed_sum += at(ky, sx + q, ci) * packed[static_cast<size_t>((((p * n.kh + ky) * ksx + ks) * 16 + k) * 16 + co)];
            }
      REQUIRE(packed_sum == Approx(direct).margin(1e-5));
    }
  }
}

namespace {

// Output (co, oy, ox) of a 3x3 padding-1 conv with ONNX weights w[c_out][c_in][3][3], summed over
// input channels [first, end) of `in(ci, y, x)` (0 outside the image): the packing tests' reference.
template <class In>
double direct_conv3x3(const std::vector<float>& w, int64_t c_in, int64_t co, int64_t first, int64_t end, int64_t oy, int64_t ox, In in) {
  double sum = 0;
  for (int64_t ci = first; ci < end; ++ci)
    for (int64_t t = 0; t < 9; ++t) sum += w[static_cast<size_t>((co * c_in + ci) * 9 + t)] * in(ci, oy + t / 3 - 1, ox + t % 3 - 1);
  return sum;
}

}  // namespace

TEST_CASE("up2 weight packing: the 4 output phases of conv3x3(upsample2x) as 2x2 convs give the direct result", "[kernels][coop-plan]") {
  // Upsampled X0 (c0 = 19 channels, 5x6 low resolution), full-resolution skip X1 (5 channels),
  // 3x3 padding 1 to 21 outputs: every output pixel computed directly and from the packed
  // phase weights (two channel tiles, two X0 chunks, one X1 chunk) must agree.
  const Conv2dShape s{24, 21, 3, 3};
  const int64_t c0 = 19, lh = 5, lw = 6, h = 2 * lh, w = 2 * lw;
  CoopConvConfig c;
  c.up2 = true, c.nt = 16, c.ck = 16, c.tile_h = 4, c.tile_w = 32, c.sg_m = 4, c.sg_n = 1;
  const std::vector<float> wts = random_values(static_cast<size_t>(21 * 24 * 9), 5);
  const std::vector<float> x0 = random_values(static_cast<size_t>(c0 * lh * lw), 6);
  const std::vector<float> x1 = random_values(static_cast<size_t>((24 - c0) * h * w), 7);
  const std::vector<float> packed = pack_coop_up2_weights(wts, s, c0, c);
  const int64_t cu = 2, cs = 1, tile = cu * 16 * 16 * 16 + cs * 9 * 16 * 16;
  REQUIRE(packed.size() == static_cast<size_t>(2 * tile));
  auto in = [&](int64_t ci, int64_t y, int64_t x) -> double {  // the conv's input, 0 outside
    if (y < 0 || y >= h || x < 0 || x >= w) return 0.0;
    return ci < c0 ? x0[static_cast<size_t>((ci * lh + y / 2) * lw + x / 2)] : x1[static_cast<size_t>(((ci - c0) * h + y) * w + x)];
  };
  auto low = [&](int64_t ci, int64_t y, int64_t x) -> double {
    return y < 0 || y >= lh || x < 0 || x >= lw ? 0.0 : x0[static_cast<size_t>((ci * lh + y) * lw + x)];
  };
  double worst = 0;
  for (int64_t co = 0; co < 21; ++co)
    for (int64_t oy = 0; oy < h; ++oy)
      for (int64_t ox = 0; ox < w; ++ox) {
        const double direct = direct_conv3x3(wts, 24, co, 0, 24, oy, ox, in);
        double phased = 0;
        const int64_t py = oy % 2, px = ox % 2, ph = py * 2 + px, base = (co / 16) * tile, j = co % 16;
        for (int64_t ci = 0; ci < c0; ++ci)
          for (int64_t t = 0; t < 4; ++t) {
            const float wp = packed[static_cast<size_t>(base + (ci / 16) * 4096 + ((ph * 4 + t) * 16 + ci % 16) * 16 + j)];
            phased += wp * low(ci, oy / 2 - 1 + py + t / 2, ox / 2 - 1 + px + t % 2);
          }
        for (int64_t ci = c0; ci < 24; ++ci)
          for (int64_t t = 0; t < 9; ++t)
            phased += packed[static_cast<size_t>(base + cu * 4096 + (t * 16 + (ci - c0)) * 16 + j)] * in(ci, oy + t / 3 - 1, ox + t % 3 - 1);
        worst = std::max(worst, std::abs(direct - phased));
      }
  CHECK(worst < 1e-4);
  // Padding: channels past c_in / c_out are zero.
  for (int64_t j = 21 % 16; j < 16; ++j) CHECK(packed[static_cast<size_t>(tile + j)] == 0.0f);
  CHECK(packed[static_cast<size_t>(cu * 4096 + (0 * 16 + 5) * 16)] == 0.0f);  // X1 channel 5 does not exist
  // One phase per workgroup with a skip of more than 12 channels: row steps (SKIP_ROWS) read
  // the same [3x3 tap][ck][nt] skip blocks, the X0 chunks the same phase blocks.
  CoopConvConfig one = c;
  one.one_phase = true, one.tile_w = 16;
  REQUIRE(one.valid());
  const Conv2dShape wide{c0 + 13, 21, 3, 3};
  const std::vector<float> wide_wts = random_values(static_cast<size_t>(21 * (c0 + 13) * 9), 10);
  CHECK(up2_skip_rows(one, 13));
  CHECK_FALSE(up2_skip_rows(one, 12));
  CHECK_FALSE(up2_skip_rows(c, 13));
  CHECK(pack_coop_up2_weights(wide_wts, wide, c0, one) == pack_coop_up2_weights(wide_wts, wide, c0, c));
}

TEST_CASE("one-phase up2 packing: the skip planes' [ky][16][nt] rows (two 2-pixel slots per row) give the direct 3x3 conv",
          "[kernels][coop-plan]") {
  const Conv2dShape s{28, 21, 3, 3};  // 19 upsampled channels + a 9-channel skip (3 planes)
  const int64_t c0 = 19, h = 6, w = 8, planes = 3;
  CoopConvConfig c;
  c.up2 = true, c.one_phase = true, c.nt = 16, c.ck = 16, c.tile_h = 4, c.tile_w = 16, c.sg_m = 4, c.sg_n = 1;
  REQUIRE(c.valid());
  {  // Epilogue passes: one phase only, whole coop-N fragments per pass.
    CoopConvConfig e = c;
    e.epi_passes = 2;
    CHECK_FALSE(e.valid());  // nt 16 is one 16-wide fragment
    e.cm_n = 8;
    CHECK(e.valid());
    CHECK(e.describe().find(" ep2") != std::string::npos);
    e.nt = 64, e.cm_n = 16, e.tile_h = 16;
    const int64_t two = e.shared_bytes(3, 3);
    e.epi_passes = 1;
    CHECK(e.shared_bytes(3, 3) == 36864);  // the 256 x 72-half staging sets the size
    CHECK(two == 23088);                   // the stage buffer does
    e.epi_passes = 3;
    CHECK_FALSE(e.valid());
    e.epi_passes = 2, e.one_phase = false, e.tile_w = 32;
    CHECK_FALSE(e.valid());
  }
  CHECK_FALSE(up2_skip_rows(c, 9));  // at most 12 channels: planes of slots
  const std::vector<float> wts = random_values(static_cast<size_t>(21 * 28 * 9), 8);
  const std::vector<float> x1 = random_values(static_cast<size_t>(9 * h * w), 9);
  const std::vector<float> packed = pack_coop_up2_weights(wts, s, c0, c);
  const int64_t cu = 2, tile = cu * 16 * 16 * 16 + planes * 3 * 16 * 16;
  REQUIRE(packed.size() == static_cast<size_t>(2 * tile));
  auto skip = [&](int64_t ci, int64_t y, int64_t x) -> double {
    return y < 0 || y >= h || x < 0 || x >= w ? 0.0 : x1[static_cast<size_t>((ci * h + y) * w + x)];
  };
  double worst = 0;
  for (int64_t co = 0; co < 21; ++co)
    for (int64_t oy = 0; oy < h; ++oy)
      for (int64_t ox = 0; ox < w; ++ox) {
        const double direct = direct_conv3x3(wts, 28, co, c0, 28, oy, ox, [&](int64_t ci, int64_t y, int64_t x) { return skip(ci - c0, y, x); });
        double slots = 0;
        // Row k of K step ky of plane p: slot k / 8 (columns ox - 1 + 2 (k / 8) and + 1), pixel
        // k % 8 / 4, channel 4 p + k % 4 (the 12th channel and the 4th column, kx = 3, read real
        // data here).
        const int64_t j = co % 16;
        for (int64_t p = 0; p < planes; ++p)
          for (int64_t ky = 0; ky < 3; ++ky)
            for (int64_t k = 0; k < 16; ++k) {
              const int64_t kx = 2 * (k / 8) + k % 8 / 4, ci = 4 * p + k % 4;
              const double v = ci < 9 ? skip(ci, oy + ky - 1, ox + kx - 1) : 1.0;
              slots += packed[static_cast<size_t>((co / 16) * tile + cu * 4096 + p * 768 + (ky * 16 + k) * 16 + j)] * v;
            }
        worst = std::max(worst, std::abs(direct - slots));
      }
  CHECK(worst < 1e-4);
}

TEST_CASE("coop configs: valid, within shared memory, only device-reported shapes chosen", "[kernels][coop-plan]") {
  const CoopTarget full = h100_like();
  for (int64_t c_in : {3, 9, 32, 67, 160})
    for (int64_t c_out : {3, 32, 48, 64, 80, 112, 200}) {
      const Conv2dShape s{c_in, c_out, 3, 3};
      for (bool pool : {false, true}) {
        const auto c = choose_coop_config(s, full, pool);
        REQUIRE(c);
        CHECK(c->valid());
        CHECK(coop_config_fits(*c, s, full, pool));
        CHECK(c->shared_bytes(3, 3) <= 49152);
        CHECK(c->subgroups() * 32 <= 1024);
        if (pool) CHECK(c->tile_h % 2 == 0);
      }
    }
  // The phase-decomposed family: 3x3 only, never with a pool, within shared memory.
  for (int64_t c_out : {3, 32, 64, 96, 112, 200}) {
    const Conv2dShape s{c_out + 3, c_out, 3, 3};
    const auto c = choose_coop_up2_config(s, full, 3);
    REQUIRE(c);
    CHECK(c->up2);
    CHECK(c->valid());
    CHECK(coop_config_fits(*c, s, full, false));
    CHECK_FALSE(coop_config_fits(*c, s, full, true));
    CHECK(c->shared_bytes(3, 3) <= 49152);
    CHECK(std::string(c->family()) == "conv2d_coopmat_up2");
  }
  CHECK_FALSE(choose_coop_up2_config({64, 64, 1, 1}, full, 0));
  // One phase per workgroup up to 64 output channels, whatever the skip.
  CHECK(choose_coop_up2_config({67, 64, 3, 3}, full, 3)->one_phase);
  for (int64_t skip : {9, 32}) {  // dec_conv1a with the 9-channel input as its skip: planes; dec_conv2a: rows (~24 KB)
    const auto c = choose_coop_up2_config({64 + skip, 64, 3, 3}, full, skip);
    REQUIRE(c);
    CHECK(c->one_phase);
    CHECK(c->epi_passes == 2);
    CHECK(c->sg_m == (skip > 12 ? 8 : 4));
    CHECK(up2_skip_rows(*c, skip) == (skip > 12));
    CHECK(up2_skip_fits(*c, skip, full));
    CoopTarget small = full;
    small.max_shared_bytes = 23500;  // the row steps need 23808 bytes
    CHECK(up2_skip_fits(*c, 9, small));
    CHECK_FALSE(up2_skip_fits(*c, 32, small));
  }
  // dec_conv1a's heuristic: 16x16 with a two-pass epilogue, within ~30 KB (two workgroups per SM
  // on the H100): the shader's declared size, as the driver reported it.
  CHECK(choose_coop_up2_config({67, 64, 3, 3}, full, 3)->epi_passes == 2);
  CHECK(choose_coop_up2_config({67, 64, 3, 3}, full, 3)->shared_bytes(3, 3) == 23088);
  CHECK(choose_coop_up2_config({64, 64, 3, 3}, full, 0)->one_phase);
  CHECK_FALSE(choose_coop_up2_config({144, 96, 3, 3}, full, 48)->one_phase);  // more than 64 channels
  // Only 16x8x16 with fp32 accumulators: every choice uses it.
  CoopTarget narrow = full;
  narrow.shapes = {{16, 8, 16, false}};
  for (int64_t c_out : {3, 32, 112}) {
    const auto c = choose_coop_config({64, c_out, 3, 3}, narrow, false);
    REQUIRE(c);
    CHECK(c->cm_n == 8);
    CHECK_FALSE(c->acc_f16);
  }
  // Shapes the shader cannot use (16x8x8 only), strides, dilations: nothing.
  CoopTarget odd = full;
  odd.shapes = {{16, 8, 8, true}};
  CHECK_FALSE(choose_coop_config({64, 64, 3, 3}, odd, false));
  CHECK_FALSE(choose_coop_config({64, 64, 3, 3, 2, 2}, full, false));
  CHECK_FALSE(choose_coop_config({64, 64, 3, 3, 1, 1, 2, 2}, full, false));
  // Too little shared memory for any tile.
  CoopTarget tiny = full;
  tiny.max_shared_bytes = 4096;
  CHECK_FALSE(choose_coop_config({64, 64, 3, 3}, tiny, false));
}

TEST_CASE("the wide-skip and narrow-plane cases take the paths they are there for (skip planes, SKIP_ROWS, NARROW planes)",
          "[kernels][coop-plan]") {
  // The heuristic plans of the emulated cases below, on an H100-like target: if a heuristic
  // change moved these convs elsewhere, those cases would stop covering the paths.
  LoweringTarget target;
  target.coop = h100_like();
  int checked = 0;
  for (Case& c : cases()) {
    if (c.name.rfind("wide skips", 0) != 0 && c.name.rfind("narrow planes", 0) != 0) continue;
    const plan::Plan plan = build_portable_plan(c.b.g, plan::Precision::F16, target);
    for (const auto& d : plan.dispatches) {
      const plan::Pipeline& p = plan.pipelines[d.pipeline];
      INFO(c.name << ": " << d.name);
      if (d.name.find("conv_skip9") != std::string::npos) {  // 3 planes of slots
        CHECK(define(p, "ONE_PHASE") == "1");
        CHECK(define(p, "SKIP_ROWS").empty());
        ++checked;
      }
      if (d.name.find("conv_skip56") != std::string::npos) {  // row steps
        CHECK(define(p, "ONE_PHASE") == "1");
        CHECK(define(p, "SKIP_ROWS") == "1");
        CHECK(define(p, "X1_HWC") == "1");
        ++checked;
      }
      if (d.name.find("conv11") != std::string::npos || d.name.find("conv9") != std::string::npos) {  // NARROW planes
        CHECK(define(p, "NARROW") == "2");
        ++checked;
      }
      if (d.name.find("conv6") != std::string::npos) {  // one-pixel slots
        CHECK(define(p, "NARROW") == "1");
        ++checked;
      }
    }
  }
  CHECK(checked == 8);  // the narrow planes' case at two widths
}

TEST_CASE("coop lowering of the OIDN U-Net: default and fp32 plans unchanged and the fp16 coop plan fuses pool/upsample/concat",
          "[kernels][coop-plan]") {
  const compiler::Graph g = oidn(modelgen::OidnUnetOptions::Size::Balanced);
  const auto portable = families(build_portable_plan(g, plan::Precision::F16));
  CHECK(portable.count("conv2d_coopmat") == 0);
  LoweringTarget target;
  target.coop = h100_like();
  // fp32 plans never use the coop family; a target without shapes is the default.
  CHECK(families(build_portable_plan(g, plan::Precision::F32, target)) == families(build_portable_plan(g, plan::Precision::F32)));
  CHECK(families(build_portable_plan(g, plan::Precision::F16, LoweringTarget{})) == portable);
  CHECK(LoweringTarget{}.key() == "portable");
  CHECK(target.key() != "portable");

  const plan::Plan plan = build_portable_plan(g, plan::Precision::F16, target);
  const auto f = families(plan);
  CHECK(f.at("conv2d_coopmat") == 10);  // enc_conv0 in enc_conv1's prologue (HEAD)
  CHECK(f.at("conv2d_coopmat_up2") == 4);  // the heuristic cost model takes the 4-tap phases
  // The last conv (32 -> 3) in dec_conv1b's epilogue (TAIL), plus its ring pass.
  CHECK(f.count("conv2d_coopmat_tapsum") == 0);
  CHECK(f.at("conv_tail_ring") == 1);
  CHECK(f.count("conv2d") == 0);
  CHECK(f.count("pool2d") == 0);            // all four max-pools in the epilogues
  CHECK(f.count("upsample_nearest") == 0);  // all four upsamples in the prologues
  CHECK(f.count("copy") == 0);              // the concats and the crop are gone
  CHECK(f.count("pad") == 0);               // read through by enc_conv0 (the head) and dec_conv1a
  CHECK(plan.dispatches.size() == 15);
  int pools = 0, concats = 0, heads = 0;
  for (const auto& d : plan.dispatches) {
    const auto& p = plan.pipelines[d.pipeline];
    if (p.family == "conv2d_coopmat_up2") concats += define(p, "CONCAT") == "1";
    if (define(p, "TAIL") == "1") {
      CHECK(d.name.find("dec_conv1b") != std::string::npos);
      CHECK(d.name.find("dec_conv0") != std::string::npos);
      CHECK(define(p, "T_COUT") == "3");
      CHECK(define(p, "X0_HWC") == "1");
    }
    if (p.family != "conv2d_coopmat" && p.family != "conv2d_coopmat_up2") continue;
    pools += define(p, "POOL") == "1";
    // enc_conv0 (3 input channels, read through the pad-to-16) runs in enc_conv1's prologue.
    CHECK(define(p, "NARROW").empty());
    if (define(p, "HEAD") == "1") {
      ++heads;
      CHECK(d.name == "/Pad+/enc_conv0/Conv+/enc_conv0/Relu+/enc_conv1/Conv+/enc_conv1/Relu+/pool1/MaxPool");
      CHECK(define(p, "H_K") == "32");
      CHECK(define(p, "POOL") == "1");
      CHECK(define(p, "X0_HWC").empty());
    }
    concats += define(p, "CONCAT") == "1" && define(p, "UPSAMPLE0") == "1";
    CHECK(std::stoi(define(p, "SG_M")) * std::stoi(define(p, "SG_N")) * 32 == static_cast<int>(p.local_size[0]));
  }
  CHECK(pools == 4);
  CHECK(concats == 4);
  CHECK(heads == 1);
  // Every tensor between two convs is NHWC (the network's 3-channel input and output stay
  // NCHW): each conv reads or writes one, and no conversion is needed.
  CHECK(nhwc_dispatches(plan) == 14);
  // The plan with one switch of the target changed (which its cache key must name).
  auto plan_with = [&](auto change) {
    LoweringTarget changed = target;
    change(changed);
    CHECK(changed.key() != target.key());
    return build_portable_plan(g, plan::Precision::F16, changed);
  };
  // Without tails: the last conv on conv2d_coopmat_tapsum (27 taps x channels in N).
  const plan::Plan untailed = plan_with([](LoweringTarget& t) { t.coop_tail = false; });
  CHECK(families(untailed).at("conv2d_coopmat_tapsum") == 1);
  CHECK(families(untailed).count("conv_tail_ring") == 0);
  CHECK(untailed.dispatches.size() == 15);
  for (const auto& d : untailed.dispatches)
    if (untailed.pipelines[d.pipeline].family == "conv2d_coopmat_tapsum") {
      CHECK(d.name.find("dec_conv0") != std::string::npos);
      CHECK(define(untailed.pipelines[d.pipeline], "X0_HWC") == "1");
    }
  plan::validate_plan(plan);
  const plan::Plan nchw_plan = plan_with([](LoweringTarget& t) { t.nhwc = false; });
  CHECK(nhwc_dispatches(nchw_plan) == 0);
  CHECK(nchw_plan.dispatches.size() == 15);

  // Without the phase-decomposed family: conv2d_coopmat reads the upsampled inputs itself.
  const plan::Plan plain = plan_with([](LoweringTarget& t) { t.coop_up2 = false; });
  CHECK(families(plain).at("conv2d_coopmat") == 14);
  CHECK(families(plain).at("conv_tail_ring") == 1);
  CHECK(plain.dispatches.size() == 15);

  // Without heads: enc_conv0 a dispatch of its own, its taps packed into K (NARROW=2).
  const plan::Plan headless = plan_with([](LoweringTarget& t) { t.coop_head = false; });
  CHECK(families(headless).at("conv2d_coopmat") == 11);
  CHECK(headless.dispatches.size() == 16);
  CHECK(nhwc_dispatches(headless) == 15);
  int narrow = 0;
  for (const auto& d : headless.dispatches) {
    const auto& p = headless.pipelines[d.pipeline];
    CHECK(define(p, "HEAD").empty());
    if (!define(p, "NARROW").empty()) {
      ++narrow;
      CHECK(define(p, "NARROW") == "2");
      CHECK(d.name.find("enc_conv0") != std::string::npos);
    }
  }
  CHECK(narrow == 1);

  // Without fusion: one coop dispatch per conv, the rest one dispatch per op.
  target.fuse = false;
  const auto unfused = families(build_portable_plan(g, plan::Precision::F16, target));
  CHECK(unfused.at("conv2d_coopmat") == 15);
  CHECK(unfused.at("conv2d_coopmat_tapsum") == 1);
  CHECK(unfused.at("pool2d") == 4);
  CHECK(unfused.at("upsample_nearest") == 4);
}

TEST_CASE("coop family emulated (COOP_EMULATE) against the CPU reference at odd sizes with channel padding and every fusion",
          "[kernels][coop-emulate]") {
  const auto& caps = device().caps();
  if (!fp16_available(caps)) return;
  LoweringTarget target = emulated_lowering_target(caps);
  for (Case& c : cases()) {
    // The heuristic and forced configurations (B_GLOBAL and not, 16 subgroups, 2x2 subgroups: a
    // head on two subgroup columns; then the up2, tap-sum and two-pass ones): llvmpipe
    // compiles each variant for a while; the [coop] test runs them all on real hardware. The
    // NHWC cases also without NHWC (-2: the heuristic, NCHW only).
    // -3: the heuristic without tails (where the case has any); -4: without heads (likewise).
    for (int variant : {-4, -3, -2, -1, 0, 1, 5, 6, 12, 13, 17, 20, 21, 22, 23, 24, 25}) {
      if ((variant == -2 && !c.nhwc) || (variant == -3 && !c.tails) || (variant == -4 && !c.heads)) continue;
      target.nhwc = variant != -2;
      target.coop_tail = variant != -3;
      target.coop_head = variant != -4;
      if (variant >= 0) target.force_config = forced_configs()[static_cast<size_t>(variant)];
      else target.force_config.reset();
      int coop = 0, up2 = 0, nhwc = 0, rings = 0;
      const double err = error_on(device(), c.b.g, target, inputs_for(c.b, c.h, c.w, 40), &coop, plan::Precision::F16, nullptr,
                                  &up2, &nhwc, &rings);
      INFO(c.name << ", config " << (variant < 0 ? std::string("heuristic") : target.force_config->describe())
                  << (target.nhwc ? "" : ", NCHW only") << (target.coop_tail ? "" : ", no tails") << (target.coop_head ? "" : ", no heads")
                  << ": relative L2 " << err);
      CHECK(coop == c.expected_coop + (target.coop_tail ? 0 : c.tails) + (target.coop_head ? 0 : c.heads));
      CHECK(rings == (target.coop_tail ? c.tails : 0));
      CHECK(up2 == (target.force_config && !target.force_config->up2 ? 0 : c.upsampled));
      // (Without heads the heads case's intermediate tensors may go NHWC.)
      if (target.coop_head) CHECK(nhwc == (c.nhwc && target.nhwc ? c.expected_coop : 0));
      CHECK(err <= 2e-2);
    }
  }
  CHECK(device().validation_errors() == 0);
}

TEST_CASE("portable conv2d with every fusion (pad, upsample, concat, pool, crop) against the CPU reference at odd sizes",
          "[kernels][conv-fusion]") {
  const LoweringTarget portable;
  for (Case& c : cases()) {
    for (plan::Precision p : {plan::Precision::F32, plan::Precision::F16}) {
      if (p == plan::Precision::F16 && !device().caps().fp16_usable()) continue;
      size_t dispatches = 0;
      const double err = error_on(device(), c.b.g, portable, inputs_for(c.b, c.h, c.w, 60), nullptr, p, &dispatches);
      INFO(c.name << ", " << plan::precision_name(p) << ": relative L2 " << err);
      CHECK(dispatches == c.expected_dispatches);
      CHECK(err <= (p == plan::Precision::F32 ? 1e-5 : 2e-2));
    }
  }
  CHECK(device().validation_errors() == 0);
}

TEST_CASE("coop family emulated: OIDN small U-Net with every fusion at 45x37", "[kernels][coop-emulate]") {
  const auto& caps = device().caps();
  if (!caps.fp16_usable()) return;
  LoweringTarget target = emulated_lowering_target(caps);
  const compiler::Graph g = oidn(modelgen::OidnUnetOptions::Size::Small);
  const double err = error_on(device(), g, target, {random_tensor({1, 3, 45, 37}, 9)});
  INFO("relative L2 " << err);
  CHECK(err <= 2e-2);
  // The last conv (32 -> 3, reading dec_conv1b's NHWC output, cropped) is dec_conv1b's tail.
  CHECK(families(compile(g, plan::Precision::F16, target))["conv_tail_ring"] == 1);
  // Without tails, on conv2d_coopmat_tapsum, forced: the one layer it fits.
  target.coop_tail = false;
  target.force_config = forced_configs()[21];
  plan::Plan plan = compile(g, plan::Precision::F16, target);
  CHECK(families(plan)["conv2d_coopmat_tapsum"] == 1);
  for (const auto& d : plan.dispatches)
    if (plan.pipelines[d.pipeline].family == "conv2d_coopmat_tapsum") CHECK(define(plan.pipelines[d.pipeline], "X0_HWC") == "1");
  const double err_tapsum = error_on(device(), g, target, {random_tensor({1, 3, 45, 37}, 9)});
  INFO("tap-sum last conv: relative L2 " << err_tapsum);
  CHECK(err_tapsum <= 2e-2);
  CHECK(device().validation_errors() == 0);
}

TEST_CASE("coop family on the GPU's cooperative matrices against the CPU reference", "[kernels][coop]") {
  if (!coop_available()) return;
  LoweringTarget target = lowering_target(coop_device().caps());
  // Every configuration the sweep of the benchmark can pick, on every case where it fits.
  std::vector<std::optional<CoopConvConfig>> configs = {std::nullopt};
  for (const auto& c : forced_configs()) configs.push_back(c);
  for (bool f16 : {true, false}) {
    target.coop.prefer_f16_accumulate = f16;
    for (Case& c : cases())
      for (const auto& config : configs) {
        target.force_config = config;
        int coop = 0, up2 = 0, nhwc = 0, rings = 0;
        const double err = error_on(coop_device(), c.b.g, target, inputs_for(c.b, c.h, c.w, 50), &coop, plan::Precision::F16,
                                    nullptr, &up2, &nhwc, &rings);
        INFO(c.name << ", " << (config ? config->describe() : std::string("heuristic, prefer ") + (f16 ? "f16" : "f32"))
                    << ": relative L2 " << err);
        CHECK(coop == c.expected_coop);
        CHECK(rings == c.tails);
        CHECK(nhwc == (c.nhwc ? c.expected_coop : 0));
        // A forced up2 configuration that does not fit leaves the heuristic's up2 choice.
        CHECK(up2 == (config && !config->up2 ? 0 : c.upsampled));
        CHECK(err <= 2e-2);
      }
  }
}

TEST_CASE("coop family on the GPU: OIDN balanced and small U-Nets at odd sizes", "[kernels][coop]") {
  if (!coop_available()) return;
  for (auto size : {modelgen::OidnUnetOptions::Size::Balanced, modelgen::OidnUnetOptions::Size::Small}) {
    const compiler::Graph g = oidn(size);
    for (auto [h, w] : {std::pair<int64_t, int64_t>{203, 317}, {61, 93}}) {
      const std::vector<HostTensor> inputs = {random_tensor({1, 3, h, w}, 77)};
      const auto expected = reference::run_reference(g, inputs);
      for (bool f16 : {true, false}) {
        LoweringTarget target = lowering_target(coop_device().caps());
        target.coop.prefer_f16_accumulate = f16;
        plan::Plan plan = compile(g, plan::Precision::F16, target);
        const int coop = coop_dispatches(plan);
        const int ups = families(plan)["conv2d_coopmat_up2"], rings = families(plan)["conv_tail_ring"];
        const double err = relative_l2(run_on(coop_device(), std::move(plan), inputs).at(0), expected.at(0));
        std::printf("coop U-Net %s %lldx%lld %s accumulation: relative L2 %.3e (%d coop dispatches)\n",
                    size == modelgen::OidnUnetOptions::Size::Balanced ? "balanced" : "small", static_cast<long long>(w),
                    static_cast<long long>(h), f16 ? "fp16" : "fp32", err, coop);
        CHECK(coop == 14);  // the first conv is enc_conv1's head, the last dec_conv1b's tail
        CHECK(rings == 1);
        CHECK(ups == 4);  // every upsampled conv phase-decomposed
        CHECK(err <= 2e-2);
      }
    }
  }
}

namespace {

// Costs by rule (a stand-in for the device measurer).
class RuleMeasurer : public autotune::Measurer {
 public:
  std::function<double(const Implementation&)> rule;
  std::vector<autotune::Measured> measure(const compiler::Graph&, const std::vector<const Implementation*>& impls, plan::Precision,
                                          uint32_t, uint32_t, const autotune::Progress&) override {
    std::vector<autotune::Measured> out;
    for (const Implementation* i : impls) {
      autotune::Measured m;
      m.ok = true;
      m.ms = rule(*i);
      out.push_back(m);
    }
    return out;
  }
};

}  // namespace

TEST_CASE("layout conversions: NHWC convs next to an NCHW-only op and at the network's boundary, emulated, against the CPU reference",
          "[kernels][coop-emulate]") {
  const auto& caps = device().caps();
  if (!caps.fp16_usable()) return;
  // x (8 ch) -> conv_a 8->16 relu -> average pool (portable, NCHW only) -> output
  //                               \-> conv_b 16->8 -> output
  // With NHWC convs made cheap, select keeps a NHWC and pays for three conversions: x to NHWC,
  // a back to NCHW for the pool, and conv_b's output back to NCHW.
  GraphBuilder b;
  const TensorId x = b.input("x", 8);
  const TensorId a = b.activation("relu_a", b.conv("conv_a", x, 16, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 61), relu());
  PoolAttrs avg;
  avg.kind = PoolKind::Average;
  avg.kernel = {2, 2};
  avg.stride = {2, 2};
  b.output(b.pool("avg", a, avg, {0, 0, 0, 0}, false));
  b.output(b.conv("conv_b", a, 8, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 62));

  autotune::ScheduleOptions opt;
  opt.precision = plan::Precision::F16;
  opt.target = emulated_lowering_target(caps);
  opt.width = 29, opt.height = 23;
  // Structural pruning would drop the conversions (each adds a dispatch; the NCHW variants
  // derive the outputs with fewer): this checks what select and the lowering do with them.
  opt.structural_prune = false;
  RuleMeasurer m;
  m.rule = [](const Implementation& i) {
    if (i.kind == Implementation::Kind::CoopConv) return i.layout_words().empty() ? 1.0 : 0.001;
    return i.kind == Implementation::Kind::PortableConv ? 2.0 : 0.01;
  };
  opt.measurer = &m;
  const autotune::Schedule s = autotune::schedule_graph(b.g, opt);
  std::set<std::string> conversions;
  for (const auto& step : s.report.steps)
    if (step.family == "copy") conversions.insert(step.name);
  CHECK(conversions == std::set<std::string>{"x NCHW->NHWC", "relu_a_out NHWC->NCHW", "conv_b_out NHWC->NCHW"});
  plan::Plan plan = autotune::lower_schedule(b.g, s, plan::Precision::F16);
  kernels::compile_pipelines(plan, shader_compiler(), 0);
  CHECK(nhwc_dispatches(plan) == 2);
  CHECK(families(plan)["copy"] == 3);
  for (auto [h, w] : {std::pair<int64_t, int64_t>{23, 29}, {16, 36}}) {
    const std::vector<HostTensor> inputs = inputs_for(b, h, w, 63);
    const auto expected = reference::run_reference(b.g, inputs);
    const auto actual = run_on(device(), plan, inputs);
    for (size_t i = 0; i < expected.size(); ++i) {
      const double err = relative_l2(actual.at(i), expected[i]);
      INFO("output " << i << " at " << w << "x" << h << ": relative L2 " << err);
      CHECK(err <= 2e-2);
    }
  }
  CHECK(device().validation_errors() == 0);
}

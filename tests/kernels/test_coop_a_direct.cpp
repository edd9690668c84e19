// conv2d_coopmat's A_DIRECT (each lane builds its A fragments from the NHWC input; no patch in
// shared memory) against the CPU reference:
//  - [coop-emulate]: with COOP_EMULATE=1 on any device (lavapipe in CI): the emulation fills its
//    fragments in the element order A_DIRECT assumes, so the loads' addressing, the zeros past
//    the image's borders and the weights' K order are checked on every CI run (channels past c_in
//    meet zero weights, so their mask changes no result and no test can see it);
//  - [coop]: on a device with cooperative matrices, where the element-order check passed
//    (runtime/vulkan/coop_layout_check.hpp), with and without a tail, and OIDN balanced.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "compiler/cost_model/cost_model.hpp"
#include "compiler/supergraph/edge_graph.hpp"
#include "coop_cases.hpp"
#include "coop_support.hpp"
#include "graph_builder.hpp"
#include "q8_support.hpp"
#include "kernels/conv2d_coopmat.hpp"
#include "kernels/implementations.hpp"
#include "kernels/lowering_target.hpp"
#include "kernels/shader_compiler.hpp"
#include "runtime/reference/reference_executor.hpp"
#include "runtime/vulkan/coop_layout_check.hpp"
#include "../runtime/gpu_test_support.hpp"

using namespace denox;
using namespace denox::kernels;
using namespace denox::testing;

namespace {

CoopConvConfig a_direct_config(int64_t th, int64_t tw, int64_t nt, int64_t ck, int64_t sg_m, bool acc_f16) {
  CoopConvConfig c;
  c.tile_h = th, c.tile_w = tw, c.nt = nt, c.ck = ck, c.sg_m = sg_m, c.sg_n = 1, c.cm_n = 16, c.acc_f16 = acc_f16;
  c.a_direct = true;
  return c;
}

// NCHW image -> conv 3->16 (its input NCHW: not A_DIRECT; the targets below take no heads, so it
// stays a dispatch of its own) -> 16->40 (one 32-channel chunk, half
// past c_in) -> 40->32 + 2x2 max-pool (chunks of 32 and 8) -> 32->32 -> 32->3 (a tail where the
// target allows one), all 3x3 with ReLU but the last. At 69x77 (odd: tiles hang over the borders)
// the last two convs (c_in 32, 34x38) have tiles of up to 16x16 whose patch lies inside their
// input: those take the loads without bounds checks (conv2d_coopmat_adirect_k.glsl).
// A 3x3 conv with padding 1 and bias, then ReLU.
compiler::TensorId conv_relu(GraphBuilder& b, const std::string& name, compiler::TensorId in, int64_t c_out, uint64_t seed) {
  return b.activation(name + "_relu", b.conv(name, in, c_out, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, seed), relu());
}

// A 2x2 max-pool of stride 2 (floor).
compiler::TensorId pool2(GraphBuilder& b, compiler::TensorId in) {
  compiler::PoolAttrs pool;
  pool.kernel = {2, 2};
  pool.stride = {2, 2};
  return b.pool("pool", in, pool, {0, 0, 0, 0}, false);
}

GraphBuilder chain() {
  GraphBuilder b;
  const compiler::TensorId x = b.input("x", 3);
  const compiler::TensorId a = conv_relu(b, "conv_a", x, 16, 61);
  const compiler::TensorId bb = conv_relu(b, "conv_b", a, 40, 62);
  const compiler::TensorId c = pool2(b, conv_relu(b, "conv_c", bb, 32, 63));
  const compiler::TensorId d = conv_relu(b, "conv_d", c, 32, 64);
  b.output(b.conv("conv_e", d, 3, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 65));
  return b;
}

// NCHW image -> conv 3->16 -> conv 16->16 (NHWC in and out) -> a zero Pad (2 rows above, 1
// column left, 1 below, 3 right) read through by a 3x3 conv 16->12 without padding: A_DIRECT
// with pad_top 2 and pad_left 1. (12 output channels: too many for the tap-sum family; the
// middle conv makes the NHWC layout the cheaper one, as between a U-Net's convs.)
GraphBuilder padded() {
  GraphBuilder b;
  const compiler::TensorId x = b.input("x", 3);
  const compiler::TensorId a =
      b.activation("conv_a_relu", b.conv("conv_a", x, 16, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 71), relu());
  compiler::PadAttrs pad;
  pad.begin = {b.c(0), b.c(0), b.c(2), b.c(1)};
  pad.end = {b.c(0), b.c(0), b.c(1), b.c(3)};
  const compiler::TensorId m =
      b.activation("conv_m_relu", b.conv("conv_m", a, 16, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 73), relu());
  const compiler::TensorId pa =
      b.op("pad", "Pad", pad, {m}, {b.c(1), b.c(16), b.add(b.shape(x)[2], b.c(3)), b.add(b.shape(x)[3], b.c(4))});
  b.output(b.activation("conv_p_relu", b.conv("conv_p", pa, 12, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, 72), relu()));
  return b;
}

// NCHW image x (3 channels) -> conv 3->c0 + 2x2 max-pool (low resolution, NHWC) -> nearest 2x
// upsample, concatenated with a 9-channel NCHW input -> conv (c0 + 9)->21: conv2d_coopmat_up2's
// one-phase X0 chunks on A_DIRECT, the skip in 3 planes (as test_coop.cpp's wide-skip case,
// whose channel counts make the cost model keep the tensors between the convs NHWC). With
// `wide_skip` the skip is conv 9->16 of that input (NHWC), staged in row steps (SKIP_ROWS).
GraphBuilder up2_chain(int64_t c0, bool wide_skip = false) {
  GraphBuilder b;
  const compiler::TensorId x = b.input("x", 3);
  const compiler::TensorId in9 = b.input("skip", 9);
  const compiler::TensorId skip = wide_skip ? conv_relu(b, "conv_s", in9, 16, 95) : in9;
  const int64_t skip_c = wide_skip ? 16 : 9;
  const compiler::TensorId lo = pool2(b, conv_relu(b, "conv_lo", x, c0, 91));
  const compiler::ValueId h = b.g.program.mul(b.shape(lo)[2], b.c(2)), w = b.g.program.mul(b.shape(lo)[3], b.c(2));
  const compiler::TensorId u = b.op("up", "Resize", compiler::UpsampleAttrs{}, {lo}, {b.c(1), b.c(c0), h, w});
  const compiler::TensorId cat = b.op("cat", "Concat", compiler::ConcatAttrs{1}, {u, skip}, {b.c(1), b.c(c0 + skip_c), h, w});
  b.output(conv_relu(b, "conv_up", cat, 21, 93));
  return b;
}

// A one-phase up2 configuration on A_DIRECT: th x 16 low-resolution pixels of one phase.
CoopConvConfig up2_a_direct_config(int64_t th, int64_t nt, int64_t sg_m, bool acc_f16) {
  CoopConvConfig c = a_direct_config(th, 16, nt, 32, sg_m, acc_f16);
  c.up2 = c.one_phase = true;
  return c;
}

// The up2 chain's output with conv_up on `c` (named for it), and the plan's up2 A_DIRECT dispatches.
HostTensor up2_output(const runtime::DeviceContext& ctx, LoweringTarget target, const GraphBuilder& b, const CoopConvConfig& c,
                      const std::vector<HostTensor>& inputs, int* up2_a_direct) {
  target.conv_configs["conv_up"] = c;
  plan::Plan plan = compile(b.g, plan::Precision::F16, target);
  *up2_a_direct = 0;
  for (const auto& d : plan.dispatches) {
    const auto& p = plan.pipelines[d.pipeline];
    *up2_a_direct += p.family == "conv2d_coopmat_up2" && define(p, "A_DIRECT") == "1";
  }
  return run_on(ctx, std::move(plan), inputs).at(0);
}

// A plan's A_DIRECT and coop dispatches.
std::pair<int, int> a_direct_and_coop(const plan::Plan& plan) {
  int a_direct = 0;
  for (const auto& d : plan.dispatches) a_direct += define(plan.pipelines[d.pipeline], "A_DIRECT") == "1";
  return {a_direct, coop_dispatches(plan)};
}

// Graph `b`'s output on `inputs` with `target` on `ctx`, its plan's A_DIRECT and coop dispatches.
HostTensor output_of(const runtime::DeviceContext& ctx, const LoweringTarget& target, const GraphBuilder& b,
                     const std::vector<HostTensor>& inputs, int* a_direct, int* coop) {
  plan::Plan plan = compile(b.g, plan::Precision::F16, target);
  std::tie(*a_direct, *coop) = a_direct_and_coop(plan);
  return run_on(ctx, std::move(plan), inputs).at(0);
}

// The same against the CPU reference: relative L2.
double error_of(const runtime::DeviceContext& ctx, const LoweringTarget& target, const GraphBuilder& b,
                const std::vector<HostTensor>& inputs, int* a_direct, int* coop) {
  return relative_l2(output_of(ctx, target, b, inputs, a_direct, coop), reference::run_reference(b.g, inputs).at(0));
}

// The chain at 77x69 (or w x h).
HostTensor chain_output(const runtime::DeviceContext& ctx, const LoweringTarget& target, int* a_direct, int* coop) {
  const GraphBuilder b = chain();
  return output_of(ctx, target, b, random_graph_inputs(b, 69, 77, 19), a_direct, coop);
}
double chain_error(const runtime::DeviceContext& ctx, const LoweringTarget& target, int* a_direct, int* coop, int64_t h = 69,
                   int64_t w = 77) {
  const GraphBuilder b = chain();
  return error_of(ctx, target, b, random_graph_inputs(b, h, w, 19), a_direct, coop);
}

// The chain's tolerance: 2e-2 (the fp16 plans' usual) would let a wrong border column through (at
// 45x37 a load one pixel past the row read 7.6e-3 in the emulation, against 1.5e-3 right; at
// 77x69 one pixel short in the unchecked loads 6.6e-2 against 1.7e-3).
constexpr double kChainTolerance = 5e-3;

}  // namespace

TEST_CASE("conv2d_coopmat A_DIRECT emulated (COOP_EMULATE) against the CPU reference: borders, chunks past c_in, pool",
          "[kernels][coop-emulate]") {
  const auto& caps = device().caps();
  if (!fp16_available(caps)) return;
  LoweringTarget target = emulated_lowering_target(caps);
  REQUIRE(target.coop.a_rows);
  target.coop_tail = false;  // (but in one case below: with a tail most tiles' emulated fragments would not fit lavapipe's 32 KB)
  target.coop_head = false;
  // 8x16 pixels, 16 channels, 2 subgroups of 4 row fragments; 4x16, 32 channels, 2 of 2 (fp32
  // accumulators); 4x16, 16 channels on two subgroup columns of 16x8x16 fragments.
  CoopConvConfig two_columns = a_direct_config(4, 16, 16, 32, 1, true);
  two_columns.sg_n = 2, two_columns.cm_n = 8;
  for (const CoopConvConfig& c : {a_direct_config(8, 16, 16, 32, 2, true), a_direct_config(4, 16, 32, 32, 2, false), two_columns}) {
    target.force_config = c;
    int a_direct = 0, coop = 0;
    const double err = chain_error(device(), target, &a_direct, &coop);
    INFO(c.describe() << ": relative L2 " << err);
    CHECK(a_direct == 4);  // conv_b to conv_e (conv_a reads the NCHW image; no tail here)
    CHECK(coop == 5);
    CHECK(err <= kChainTolerance);
  }
  // Sharper: with fp32 accumulators only the summation order differs from the same tile staged
  // through shared memory (the fp16 tensors between the convs may round a step apart).
  {
    CoopConvConfig c = a_direct_config(8, 16, 16, 32, 2, false);
    int a_direct = 0, coop = 0, staged_a_direct = 0, staged_coop = 0;
    target.force_config = c;
    const HostTensor direct = chain_output(device(), target, &a_direct, &coop);
    c.a_direct = false;
    target.force_config = c;
    const HostTensor staged = chain_output(device(), target, &staged_a_direct, &staged_coop);
    const double diff = relative_l2(direct, staged);
    INFO("A_DIRECT against staged, " << c.describe() << ": relative L2 " << diff);
    CHECK(a_direct == 4);
    CHECK(staged_a_direct == 0);
    CHECK(diff <= 1e-3);
  }
  // With conv_e as conv_d's tail: its constants staged after the chunk loop, over the weights
  // (TAIL_LATE_CONSTS). 4x16 pixels on 2 subgroups of 2 rows: the emulation's fragments fit.
  {
    target.coop_tail = true;
    target.force_config = a_direct_config(4, 16, 32, 32, 2, true);
    int a_direct = 0, coop = 0;
    const double err = chain_error(device(), target, &a_direct, &coop);
    INFO("tail, " << target.force_config->describe() << ": relative L2 " << err);
    CHECK(a_direct == 3);
    CHECK(coop == 4);
    CHECK(err <= kChainTolerance);
    target.coop_tail = false;
  }
  // At 67x35 conv_d's and conv_e's input is 33x17: with 8x16 tiles the interior tile (1, 1)'s
  // patch ends exactly at its last row and column; at 65x35 (32 columns) tile column 1's patch
  // is one column short of inside (a lax test would read the next row's first pixel).
  for (int64_t w : {67, 65}) {
    target.force_config = a_direct_config(8, 16, 16, 32, 2, true);
    int a_direct = 0, coop = 0;
    const double err = chain_error(device(), target, &a_direct, &coop, 35, w);
    INFO(w << "x35: relative L2 " << err);
    CHECK(a_direct == 4);
    CHECK(err <= kChainTolerance);
  }
  // A zero Pad read through (pad_top 2, pad_left 1 and a conv without padding of its own).
  {
    target.force_config = a_direct_config(8, 16, 16, 32, 2, true);
    const GraphBuilder b = padded();
    int a_direct = 0, coop = 0;
    const double err = error_of(device(), target, b, random_graph_inputs(b, 29, 35, 23), &a_direct, &coop);
    INFO("folded Pad: relative L2 " << err);
    CHECK(a_direct == 2);  // conv_m and conv_p
    CHECK(err <= kChainTolerance);
  }
  // Without NHWC tensors nothing may take it, and the convs keep the heuristic's coop configurations.
  target.force_config = a_direct_config(8, 16, 16, 32, 2, true);
  target.nhwc = false;
  int a_direct = 0, coop = 0;
  CHECK(chain_error(device(), target, &a_direct, &coop) <= kChainTolerance);
  CHECK(a_direct == 0);
  CHECK(coop == 5);
  CHECK(device().validation_errors() == 0);
}

TEST_CASE("conv2d_coopmat_up2 one-phase A_DIRECT emulated against the CPU reference: borders, chunks past c0, the skip plane",
          "[kernels][coop-emulate]") {
  const auto& caps = device().caps();
  if (!fp16_available(caps)) return;
  LoweringTarget target = emulated_lowering_target(caps);
  target.coop_head = target.coop_tail = false;
  // c0 64: two 32-channel chunks, and tiles whose patch lies inside X0 (the unchecked loads);
  // c0 40: the second chunk mostly past c0, every tile checked. Full resolution 46x38 (low 23x19,
  // odd); for c0 64 also 34x34 (low 17x17: with 8x16 tiles the patch of tile row 1 in phase
  // (1, 1) ends exactly at X0's last row and column) and 32x34 (16 columns: every patch one
  // column short of inside; a lax test would read the next row's first pixel).
  for (auto [c0, w, h] : {std::tuple<int64_t, int64_t, int64_t>{64, 46, 38}, {40, 46, 38}, {64, 34, 34}, {64, 32, 34}}) {
    const GraphBuilder b = up2_chain(c0);
    const std::vector<HostTensor> inputs = random_graph_inputs(b, h, w, 29);
    const HostTensor want = reference::run_reference(b.g, inputs).at(0);
    // 8x16 pixels of a phase on 2 subgroups of 4 row fragments, and on 4 of 2 (fp32 accumulators).
    for (const CoopConvConfig& c : {up2_a_direct_config(8, 32, 2, true), up2_a_direct_config(8, 32, 4, false)}) {
      int a_direct = 0;
      const double err = relative_l2(up2_output(device(), target, b, c, inputs, &a_direct), want);
      INFO("c0 " << c0 << ", " << w << "x" << h << ", " << c.describe() << ": relative L2 " << err);
      CHECK(a_direct == 1);
      CHECK(err <= kChainTolerance);
    }
    // Sharper: the same tile staged (fp32 accumulators), only the summation order differs.
    CoopConvConfig c = up2_a_direct_config(8, 32, 4, false);
    int a_direct = 0, staged_a_direct = 0;
    const HostTensor direct = up2_output(device(), target, b, c, inputs, &a_direct);
    c.a_direct = false;
    const HostTensor staged = up2_output(device(), target, b, c, inputs, &staged_a_direct);
    INFO("c0 " << c0 << ", " << w << "x" << h << ": A_DIRECT against staged, relative L2 " << relative_l2(direct, staged));
    CHECK(a_direct == 1);
    CHECK(staged_a_direct == 0);
    CHECK(relative_l2(direct, staged) <= 1e-3);
  }
  // A 16-channel NHWC skip, staged in row steps (SKIP_ROWS) between the X0 chunks: 4x16 on 2
  // subgroups (the emulation's fragments and the row steps fit lavapipe's 32 KB).
  {
    const GraphBuilder b = up2_chain(64, true);
    const std::vector<HostTensor> inputs = random_graph_inputs(b, 38, 46, 31);
    int a_direct = 0;
    const double err = relative_l2(up2_output(device(), target, b, up2_a_direct_config(4, 32, 2, true), inputs, &a_direct),
                                   reference::run_reference(b.g, inputs).at(0));
    INFO("16-channel skip in row steps: relative L2 " << err);
    CHECK(a_direct == 1);
    CHECK(err <= kChainTolerance);
  }
  CHECK(device().validation_errors() == 0);
}

TEST_CASE("conv2d_coopmat A_DIRECT is offered only where the element order was checked", "[kernels][coop-plan]") {
  LoweringTarget target;
  target.coop = h100_like();
  target.coop_head = false;
  target.force_config = a_direct_config(16, 16, 32, 32, 4, true);
  const GraphBuilder b = chain();
  auto count = [&] { return a_direct_and_coop(compile(b.g, plan::Precision::F16, target)).first; };
  CHECK(count() == 0);  // a_rows unset: the heuristic's configurations
  target.coop.a_rows = true;
  CHECK(count() == 3);
  CHECK(target.key().find(";arows") != std::string::npos);
  // OIDN balanced: forced, it runs its 9 plain convs (one with the tail), and the fusions it
  // cannot run (the head, the upsampled concats) keep their coop configurations.
  target.coop_head = true;
  const compiler::Graph g = oidn(modelgen::OidnUnetOptions::Size::Balanced);
  const auto [a_direct, coop] = a_direct_and_coop(compile(g, plan::Precision::F16, target));
  CHECK(a_direct == 9);
  // The fusions A_DIRECT cannot run keep their coop configurations: as many coop dispatches as
  // with the same tile staged. (A forced conv2d_coopmat configuration keeps conv2d_coopmat_up2
  // off the upsampled convs either way.)
  CoopConvConfig staged = *target.force_config;
  staged.a_direct = false;
  target.force_config = staged;
  CHECK(coop == a_direct_and_coop(compile(g, plan::Precision::F16, target)).second);
}

TEST_CASE("the tuned configuration spaces offer A_DIRECT to plain NHWC convs where the element order was checked",
          "[kernels][coop-plan]") {
  const compiler::Graph g = oidn(modelgen::OidnUnetOptions::Size::Balanced);
  LoweringTarget target;
  target.coop = h100_like();
  auto a_direct_impls = [&](ConfigSpace space) {
    std::vector<Implementation> out;
    for (Implementation& i : enumerate_implementations(g, plan::Precision::F16, target, space))
      if (i.kind == Implementation::Kind::CoopConv && i.coop.config.a_direct) out.push_back(std::move(i));
    return out;
  };
  for (ConfigSpace space : {ConfigSpace::Heuristic, ConfigSpace::Pruned, ConfigSpace::Full}) CHECK(a_direct_impls(space).empty());
  target.coop.a_rows = true;  // (the heuristic's own A_DIRECT picks: the next test case)
  const std::vector<Implementation> pruned = a_direct_impls(ConfigSpace::Pruned), full = a_direct_impls(ConfigSpace::Full);
  CHECK(full.size() > pruned.size());
  std::set<std::string> dec_conv2b, convs, up2_convs, pruned_up2_convs;
  for (const std::vector<Implementation>* impls : {&pruned, &full})
    for (const Implementation& i : *impls) {
      INFO(i.name() << " [" << i.config << "]");
      // An NHWC X0 read by the lanes, 32-channel chunks, no head.
      CHECK(i.input_layout(0) == Layout::NHWC);
      CHECK(i.coop.config.ck == 32);
      CHECK(i.fusion.head == nullptr);
      if (i.family == "conv2d_coopmat_up2") {  // a one-phase upsampled conv's X0 chunks
        CHECK(i.coop.config.one_phase);
        CHECK(i.fusion.upsample != nullptr);
        up2_convs.insert(i.anchor->name);
        if (impls == &pruned) pruned_up2_convs.insert(i.anchor->name);
        continue;
      }
      // Else its own NHWC input: no concat or upsample (a pool and a tail may follow).
      CHECK(i.family == "conv2d_coopmat");
      CHECK(i.fusion.concat == nullptr);
      CHECK(i.fusion.upsample == nullptr);
      convs.insert(i.anchor->name);
      if (impls == &pruned && i.anchor->name == "/dec_conv2b/Conv") dec_conv2b.insert(i.coop.config.describe());
    }
  // The upsampled convs with an NHWC X0; the pruned list's one-phase A_DIRECT tiles reach
  // dec_conv1a (OIDN small's winner there on the H200, bench/prune/README.md).
  CHECK(up2_convs == std::set<std::string>{"/dec_conv4a/Conv", "/dec_conv3a/Conv", "/dec_conv2a/Conv", "/dec_conv1a/Conv"});
  CHECK(pruned_up2_convs.count("/dec_conv1a/Conv") == 1);
  // The pruned list's A_DIRECT templates (coop_configs_pruned.inc, from the H200's exhaustive
  // data), at dec_conv2b's 64 output channels (the "full" tile, dec_conv1b's, is nt 64 here).
  CHECK(dec_conv2b == std::set<std::string>{"16x16 nt32 ck32 sg4x1 16x16x16 f16acc adirect", "16x16 nt64 ck32 sg4x1 16x16x16 f16acc adirect"});
  // Every conv with an NHWC input of a multiple of 8 channels: also enc_conv1 without the head,
  // and dec_conv4a/3a/2a reading their concat materialized; not enc_conv0 (the 3-channel image)
  // nor dec_conv1a (64 + 3 channels).
  CHECK(convs.size() == 13);
  CHECK(convs.count("/enc_conv0/Conv") == 0);
  CHECK(convs.count("/dec_conv1a/Conv") == 0);
  // The shared memory of the configurations the H200 runs (two workgroups per SM up to ~24 KB):
  // the weights stage (9 x 32 rows of 40 halves); with dec_conv0 as the tail, its constants after
  // the rows (TAIL_LATE_CONSTS); dec_conv1a's one phase: the epilogue's pass (256 x 40 halves).
  CHECK(a_direct_config(16, 16, 32, 32, 4, true).shared_bytes(3, 3) == 23040);
  Conv2dShape dec_conv1b;
  dec_conv1b.c_in = 64, dec_conv1b.c_out = 32, dec_conv1b.kh = dec_conv1b.kw = 3;
  dec_conv1b.sh = dec_conv1b.sw = dec_conv1b.dh = dec_conv1b.dw = 1;
  CHECK(coop_tail_shared_bytes(a_direct_config(16, 16, 32, 32, 4, true), dec_conv1b, CoopTail(3, 32)) == 23104);
  CoopConvConfig one_phase = up2_a_direct_config(16, 64, 4, true);
  one_phase.epi_passes = 2;
  CHECK(one_phase.shared_bytes(3, 3) == 20480);
  // With int8 tensors too: no A_DIRECT implementation reads an NHWC_Q8 tensor, and each lowers.
  LoweringTarget t8 = h100_int8_target(g, {random_tensor({1, 3, 40, 48}, 5)});
  t8.coop.a_rows = true;
  const std::vector<int64_t> values = *autotune::values_at_extent(g, 320, 200);
  int lowered = 0;
  for (const Implementation& i : enumerate_implementations(g, plan::Precision::F16, t8, ConfigSpace::Pruned)) {
    if (i.kind != Implementation::Kind::CoopConv || !i.coop.config.a_direct) continue;
    INFO(i.name() << " [" << i.config << "]");
    CHECK(i.input_layout(0) == Layout::NHWC);
    const autotune::EdgeGraph edge = autotune::extract_edge_graph(g, i, values, plan::Precision::F16);
    CHECK_NOTHROW(lower_implementations(edge.graph, plan::Precision::F16, {&edge.impl}));
    ++lowered;
  }
  CHECK(lowered > 0);
}

TEST_CASE("the heuristic takes A_DIRECT where the element order was checked, on the convs it won on the H200", "[kernels][coop-plan]") {
  LoweringTarget target;
  target.coop = h100_like();
  // A heuristic plan's A_DIRECT dispatches: name -> family, tile and channel tile.
  auto a_direct_dispatches = [&](modelgen::OidnUnetOptions::Size size) {
    std::map<std::string, std::string> out;
    const plan::Plan p = build_portable_plan(oidn(size), plan::Precision::F16, target);
    for (const auto& d : p.dispatches) {
      const plan::Pipeline& pl = p.pipelines[d.pipeline];
      if (define(pl, "A_DIRECT") == "1")
        out[d.name] = pl.family + " " + define(pl, "TILE_H") + "x" + define(pl, "TILE_W") + " nt" + define(pl, "NT");
    }
    return out;
  };
  using Size = modelgen::OidnUnetOptions::Size;
  CHECK(a_direct_dispatches(Size::Balanced).empty());  // a_rows unset
  target.coop.a_rows = true;
  // OIDN balanced (ranked at 1920x1088): the convs of at most 64 output channels (48 with a
  // pool), and 96 at 1/4 resolution (dec_conv3b), that read one NHWC input, and dec_conv1a's one
  // phase; not enc_conv3 (48 -> 64, pool), enc_conv4 (80) or dec_conv4b (112), not enc_conv5a/5b
  // (96 at 1/16), nor dec_conv2a-4a (their skips in row steps), nor the HEAD.
  const std::string plain = "conv2d_coopmat 16x16 nt32";
  CHECK(a_direct_dispatches(Size::Balanced) ==
        std::map<std::string, std::string>{{"/enc_conv2/Conv+/enc_conv2/Relu+/pool2/MaxPool", plain},
                                           {"/dec_conv3b/Conv+/dec_conv3b/Relu", plain},
                                           {"/dec_conv2b/Conv+/dec_conv2b/Relu", plain},
                                           {"/up1/Resize+/up1/Concat+/dec_conv1a/Conv+/dec_conv1a/Relu", "conv2d_coopmat_up2 16x16 nt64"},
                                           {"/dec_conv1b/Conv+/dec_conv1b/Relu+/dec_conv0/Conv+/Slice_1+/Slice_2", plain}});
  // OIDN small (32 and 64 channels): the plain convs at 1/8 resolution and above (all but the
  // HEAD and enc_conv5a/5b, at 1/16 on choose_coop_config's 8x16 tiles) and dec_conv1a's 32
  // channels on 8x16.
  const std::map<std::string, std::string> small = a_direct_dispatches(Size::Small);
  CHECK(small.size() == 8);
  const std::string dec_conv1a = "/up1/Resize+/up1/Concat+/dec_conv1a/Conv+/dec_conv1a/Relu";
  CHECK(small.count(dec_conv1a) == 1);
  if (small.count(dec_conv1a)) CHECK(small.at(dec_conv1a) == "conv2d_coopmat_up2 8x16 nt32");
  for (const auto& [name, what] : small) {
    INFO(name << ": " << what);
    CHECK(name.find("enc_conv1") == std::string::npos);
    CHECK(name.find("enc_conv5") == std::string::npos);
    CHECK(name.find("dec_conv4a") == std::string::npos);
    if (name != dec_conv1a) CHECK(what == plain);
  }
  // The int8 heuristic plans: with the element order checked, dec_conv1a (an fp16 up2 conv
  // writing NHWC_Q8) takes A_DIRECT, reading its X0 in fp16 (small's dec_conv2b then writes
  // fp16 rather than NHWC_Q8); every other dispatch is as without it.
  for (Size size : {Size::Balanced, Size::Small}) {
    const compiler::Graph g = oidn(size);
    LoweringTarget t8 = h100_int8_target(g, {random_tensor({1, 3, 40, 48}, 5)});
    auto dispatches = [&] {
      std::map<std::string, std::map<std::string, std::string>> out;
      const plan::Plan p = build_portable_plan(g, plan::Precision::F16, t8);
      for (const auto& d : p.dispatches) {
        const auto& defines = p.pipelines[d.pipeline].defines;
        out[d.name] = std::map<std::string, std::string>(defines.begin(), defines.end());
      }
      return out;
    };
    auto before = dispatches();
    t8.coop.a_rows = true;
    auto after = dispatches();
    REQUIRE(after.size() == before.size());
    const std::string dec_conv1a = "/up1/Resize+/up1/Concat+/dec_conv1a/Conv+/dec_conv1a/Relu";
    REQUIRE(after.count(dec_conv1a) == 1);
    CHECK(after.at(dec_conv1a).at("A_DIRECT") == "1");
    CHECK(after.at(dec_conv1a).at("Y_Q8") == "1");
    CHECK(after.at(dec_conv1a).count("X0_Q8") == 0);
    CHECK(before.at(dec_conv1a).count("A_DIRECT") == 0);
    const std::string dec_conv2b = "/dec_conv2b/Conv+/dec_conv2b/Relu";
    for (const auto& [name, defines] : after) {
      INFO(name);
      if (name == dec_conv1a) continue;
      if (size == Size::Small && name == dec_conv2b) {  // (its output, X0 of dec_conv1a, now fp16)
        auto y_q8 = [](const std::map<std::string, std::string>& d) { return d.count("Y_Q8") ? d.at("Y_Q8") : "0"; };
        CHECK(y_q8(before.at(name)) == "1");
        CHECK(y_q8(defines) == "0");
        continue;
      }
      CHECK(defines == before.at(name));
    }
    // Only the heuristic space leaves up2's X0_Q8 out: tuning still measures dec_conv1a reading int8.
    auto reads_x0_q8 = [&](ConfigSpace space) {
      const std::vector<Implementation> impls = enumerate_implementations(g, plan::Precision::F16, t8, space);
      return std::any_of(impls.begin(), impls.end(), [&](const Implementation& i) {
        return i.family == "conv2d_coopmat_up2" && i.name().find("/dec_conv1a/Conv") != std::string::npos &&
               i.input_layout(0) == Layout::NHWC_Q8;
      });
    };
    CHECK_FALSE(reads_x0_q8(ConfigSpace::Heuristic));
    CHECK(reads_x0_q8(ConfigSpace::Pruned));
  }
}

TEST_CASE("conv2d_coopmat A_DIRECT on the GPU's cooperative matrices against the CPU reference", "[kernels][coop]") {
  if (!coop_available()) return;
  LoweringTarget target = lowering_target_with_a_direct(coop_device());
  if (!target.coop.a_rows) {
    const std::string why = runtime::coop_a_rows_mismatch(coop_device(), compile_shader("coop_a_layout", {}, plan::Precision::F32));
    // NVIDIA's drivers (H100, H200: 580) have the order; elsewhere a mismatch is an answer, not a bug.
    INFO("the element-order check: " << (why.empty() ? std::string("passed now, failed before") : why));
    CHECK(coop_device().caps().vendor_id != 0x10de);
    WARN("A_DIRECT is off on this device: " << why);
    return;
  }
  target.coop_head = false;
  for (const CoopConvConfig& c : {a_direct_config(16, 16, 32, 32, 4, true), a_direct_config(16, 32, 32, 32, 8, true),
                                  a_direct_config(8, 32, 32, 64, 4, false), a_direct_config(8, 16, 16, 32, 2, true)})
    for (bool tail : {true, false}) {
      if (tail && c.nt < 32) continue;  // (a tail needs every output channel in one tile)
      target.force_config = c;
      target.coop_tail = tail;
      int a_direct = 0, coop = 0;
      const double err = chain_error(coop_device(), target, &a_direct, &coop);
      INFO(c.describe() << (tail ? ", tail" : "") << ": relative L2 " << err);
      CHECK(a_direct == (tail ? 3 : 4));
      CHECK(coop == (tail ? 4 : 5));
      CHECK(err <= kChainTolerance);
    }
  // OIDN balanced at odd sizes with every plain NHWC conv on A_DIRECT (the rest heuristic).
  const compiler::Graph g = oidn(modelgen::OidnUnetOptions::Size::Balanced);
  target.coop_tail = target.coop_head = true;
  target.force_config = a_direct_config(16, 16, 32, 32, 4, true);
  for (auto [h, w] : {std::pair<int64_t, int64_t>{203, 317}, {61, 93}}) {
    const std::vector<HostTensor> inputs = {random_tensor({1, 3, h, w}, 78)};
    plan::Plan plan = compile(g, plan::Precision::F16, target);
    const int a_direct = a_direct_and_coop(plan).first;
    const double err = relative_l2(run_on(coop_device(), std::move(plan), inputs).at(0), reference::run_reference(g, inputs).at(0));
    INFO("OIDN balanced " << w << "x" << h << ": relative L2 " << err << ", " << a_direct << " A_DIRECT dispatches");
    CHECK(a_direct == 9);
    CHECK(err <= 2e-2);
  }
}

TEST_CASE("conv2d_coopmat_up2 one-phase A_DIRECT on the GPU's cooperative matrices against the CPU reference", "[kernels][coop]") {
  if (!coop_available()) return;
  LoweringTarget target = lowering_target_with_a_direct(coop_device());
  if (!target.coop.a_rows) return;  // (the plain test above says why, and fails on NVIDIA)
  target.coop_head = target.coop_tail = false;
  for (int64_t c0 : {64, 40}) {
    const GraphBuilder b = up2_chain(c0);
    const std::vector<HostTensor> inputs = random_graph_inputs(b, 38, 46, 29);
    const HostTensor want = reference::run_reference(b.g, inputs).at(0);
    // 16x16 of a phase on 4 subgroups of 4 rows and on 8 of 2; 8x16 on 2 subgroup columns.
    CoopConvConfig columns = up2_a_direct_config(8, 32, 2, false);
    columns.sg_n = 2;
    for (const CoopConvConfig& c : {up2_a_direct_config(16, 32, 4, true), up2_a_direct_config(16, 32, 8, true), columns}) {
      int a_direct = 0;
      const double err = relative_l2(up2_output(coop_device(), target, b, c, inputs, &a_direct), want);
      INFO("c0 " << c0 << ", " << c.describe() << ": relative L2 " << err);
      CHECK(a_direct == 1);
      CHECK(err <= kChainTolerance);
    }
  }
  // OIDN balanced at odd sizes: dec_conv1a (64 + 3 channels, the image's plane) and dec_conv2a
  // (64 + 32 channels, the skip in row steps) on A_DIRECT, the rest heuristic.
  const compiler::Graph g = oidn(modelgen::OidnUnetOptions::Size::Balanced);
  target.coop_head = target.coop_tail = true;
  CoopConvConfig c = up2_a_direct_config(16, 64, 4, true);
  c.epi_passes = 2;
  target.conv_configs["/dec_conv1a/Conv"] = c;
  target.conv_configs["/dec_conv2a/Conv"] = c;
  for (auto [h, w] : {std::pair<int64_t, int64_t>{203, 317}, {61, 93}}) {
    const std::vector<HostTensor> inputs = {random_tensor({1, 3, h, w}, 78)};
    plan::Plan plan = compile(g, plan::Precision::F16, target);
    int a_direct = 0;
    for (const auto& d : plan.dispatches)
      a_direct += plan.pipelines[d.pipeline].family == "conv2d_coopmat_up2" && define(plan.pipelines[d.pipeline], "A_DIRECT") == "1";
    const double err = relative_l2(run_on(coop_device(), std::move(plan), inputs).at(0), reference::run_reference(g, inputs).at(0));
    INFO("OIDN balanced " << w << "x" << h << ": relative L2 " << err << ", " << a_direct << " up2 A_DIRECT dispatches");
    CHECK(a_direct == 2);
    CHECK(err <= 2e-2);
  }
}

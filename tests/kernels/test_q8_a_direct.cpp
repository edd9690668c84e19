// conv2d_coopmat_q8's A_DIRECT (each lane builds its int8 A fragments from the NHWC_Q8 input; only
// the weights are staged: shaders/conv2d_coopmat_q8_adirect.glsl):
//  - [q8-plan]: the configuration rules, the shared-memory formulas, the K order, and which
//    convs the tuner's spaces offer it to;
//  - [q8-emulate]: with COOP_EMULATE=1 on any device (lavapipe in CI; the emulation fills its
//    fragments in the element order A_DIRECT assumes), against the fp32 CPU reference at odd
//    sizes and bit for bit against the same tiles staged (integer sums: the K order changes
//    nothing);
//  - [q8]: the same on the device's int8 cooperative matrices, where the int8 element-order
//    check passed (runtime/vulkan/coop_layout_check.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>

#include "../runtime/gpu_test_support.hpp"
#include "coop_support.hpp"
#include "graph_builder.hpp"
#include "kernels/conv2d_coopmat_q8.hpp"
#include "kernels/implementations.hpp"
#include "kernels/lowering_target.hpp"
#include "kernels/shader_compiler.hpp"
#include "q8_support.hpp"
#include "runtime/vulkan/coop_layout_check.hpp"

using namespace denox;
using namespace denox::compiler;
using namespace denox::kernels;
using namespace denox::testing;

namespace {

CoopConvConfig q8_ad(int64_t th, int64_t tw, int64_t nt, int64_t sg_m, bool a_direct = true) {
  CoopConvConfig c;
  c.q8 = true, c.acc_f16 = false, c.cm_n = 16;
  c.tile_h = th, c.tile_w = tw, c.nt = nt, c.ck = 64, c.sg_m = sg_m, c.sg_n = 1, c.a_direct = a_direct;
  return c;
}

TensorId conv_relu(GraphBuilder& b, const std::string& name, TensorId in, int64_t c_out, uint64_t seed) {
  return b.activation(name + "_relu", b.conv(name, in, c_out, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, seed), ActivationAttrs{});
}

// x (16 channels) -> conv0 16->64 (fp16, writing NHWC_Q8) -> conv1 64->32 (one full 64-channel
// chunk: interior tiles take the unchecked loads) -> conv2 32->64 + 2x2 max-pool (half the chunk
// past c_in) -> conv3 64->32 -> conv4 32->3 (conv3's tail where the target allows one), all 3x3
// with ReLU but the last. conv1-conv3 read one NHWC_Q8 input each: A_DIRECT's convs.
GraphBuilder q8_chain() {
  GraphBuilder b;
  const TensorId x = b.input("x", 16);
  TensorId t = conv_relu(b, "conv0", x, 64, 61);
  t = conv_relu(b, "conv1", t, 32, 62);
  t = conv_relu(b, "conv2", t, 64, 63);
  PoolAttrs pool;
  pool.kernel = {2, 2};
  pool.stride = {2, 2};
  t = b.pool("pool", t, pool, {0, 0, 0, 0}, false);
  t = conv_relu(b, "conv3", t, 32, 64);
  b.output(b.conv("conv4", t, 3, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 65));
  return b;
}

// The chain's plan with `c` named for conv1-conv3.
plan::Plan chain_plan(const GraphBuilder& b, LoweringTarget target, const CoopConvConfig& c) {
  for (const char* conv : {"conv1", "conv2", "conv3"}) target.conv_configs[conv] = c;
  return compile(b.g, plan::Precision::F16, target);
}

// The chain with A_DIRECT `c` against the CPU reference at odd sizes, and bit for bit against
// the same tiles staged in 32-channel chunks (whose patch and weights fit lavapipe's 32 KB
// beside a tail's constants).
void check_chain(const runtime::DeviceContext& ctx, const LoweringTarget& target, const CoopConvConfig& c, int tails) {
  const GraphBuilder b = q8_chain();
  INFO(c.describe() << (tails ? " with a tail" : ""));
  const plan::Plan direct = chain_plan(b, target, c);
  CHECK(q8_dispatches_with(direct, {{"A_DIRECT", "1"}}) == 3);
  CHECK(q8_dispatches_with(direct, {{"A_DIRECT", "1"}, {"TAIL", "1"}}) == tails);
  CHECK(q8_dispatches_with(direct, {{"A_DIRECT", "1"}, {"POOL", "1"}}) == 1);
  // 77x69: 16-row tiles of conv1's 77x69 and conv3's 38x34 lie inside their input; 35x67 and
  // 35x65: the exact fit and one column short of it for 4- and 8-row tiles (conv_a_direct's
  // fp16 test says why).
  check_sizes(ctx, b, direct, {{77, 69}, {35, 67}, {35, 65}}, 71, 3e-2);
  CoopConvConfig staged = c;
  staged.a_direct = false, staged.ck = 32;
  const plan::Plan reference = chain_plan(b, target, staged);
  CHECK(q8_dispatches_with(reference, {{"A_DIRECT", "1"}}) == 0);
  CHECK(q8_dispatches_with(reference, {{"TAIL", "1"}}) == tails);
  for (auto [h, w] : {std::pair<int64_t, int64_t>{77, 69}, {35, 65}}) {
    const std::vector<HostTensor> in = random_inputs(b, h, w, 73);
    const std::vector<HostTensor> got = run_on(ctx, direct, in), want = run_on(ctx, reference, in);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i].f32 == want[i].f32);
  }
}

}  // namespace

TEST_CASE("int8 A_DIRECT configurations: validity, shared memory, the K order", "[kernels][q8-plan]") {
  CHECK(q8_config_valid(q8_ad(16, 16, 32, 4)));
  CHECK(q8_config_valid(q8_ad(16, 32, 32, 8)));
  CHECK(q8_config_valid(q8_ad(8, 32, 32, 4)));
  CHECK(!q8_config_valid(q8_ad(16, 16, 32, 16)));  // one fragment a subgroup: no reuse geometry
  CHECK(!q8_config_valid(q8_ad(8, 32, 32, 1)));    // 16 fragments a subgroup: more than a column of 8 rows
  CoopConvConfig c = q8_ad(16, 16, 32, 4);
  c.ck = 32;
  CHECK(!q8_config_valid(c));  // a 16-byte load spans two K steps: 64-channel chunks
  c = q8_ad(16, 16, 32, 4);
  c.b_global = true;
  CHECK(!q8_config_valid(c));
  // 16x16 nt32: only the weights (9 x 32 rows of 5 vectors) = 23040 bytes, and with a 32 -> 3
  // tail its W2 after the rows (20480 + 2560), not after everything: two workgroups an SM.
  const Conv2dShape s{64, 32, 3, 3};
  CHECK(q8_shared_bytes(q8_ad(16, 16, 32, 4), 3, 3) == 23040);
  CHECK(q8_shared_bytes(q8_ad(16, 16, 32, 4, false), 3, 3) == 16 * (18 * 18 * 5 + 9 * 32 * 5));
  CHECK(q8_tail_shared_bytes(q8_ad(16, 16, 32, 4), s, CoopTail(3, 32)) == 23040);
  CHECK(q8_a_direct_emulation_bytes(q8_ad(16, 16, 32, 4), 3) == 4 * 2 * 6 * 512);
  // The K order: a permutation within each 64 channels, lane t's 16 bytes at step s's K words
  // t and t + 4 (channel 16 t + 8 s + 4 q + b at row 32 s + 4 (t + 4 q) + b).
  std::set<int64_t> rows;
  for (int64_t ci = 0; ci < 128; ++ci) {
    const int64_t k = a_direct_k(ci, 128, 4);
    CHECK(k / 64 == ci / 64);
    rows.insert(k);
  }
  CHECK(rows.size() == 128);
  CHECK(a_direct_k(16 * 2 + 8 * 1 + 4 * 1 + 3, 64, 4) == 32 * 1 + 4 * (2 + 4) + 3);
  CHECK(a_direct_k(16 * 3 + 4 * 1 + 1, 64, 4) == 4 * (3 + 4) + 1);
}

TEST_CASE("the tuned int8 spaces offer A_DIRECT to one-input convs where the int8 element order was checked", "[kernels][q8-plan]") {
  const GraphBuilder b = q8_chain();
  LoweringTarget target = h100_int8_target(b.g, random_inputs(b, 40, 40, 5));
  target.coop.a_rows = true;  // (fp16's: not enough)
  auto offered = [&](const char* conv) {
    std::set<std::string> configs;
    for (const Implementation& impl : enumerate_implementations(b.g, plan::Precision::F16, target, ConfigSpace::Full))
      if (impl.kind == Implementation::Kind::CoopConv && impl.coop.config.q8 && impl.coop.config.a_direct && impl.anchor->name == conv) {
        CHECK(impl.input_layout(0) == Layout::NHWC_Q8);
        CHECK(impl.fusion.concat == nullptr);
        CHECK(impl.fusion.upsample == nullptr);
        configs.insert(impl.config);
      }
    return configs.size();
  };
  CHECK(offered("conv1") == 0);
  target.coop.a_rows_q8 = true;
  CHECK(offered("conv1") > 0);
  CHECK(offered("conv3") > 0);
  // Every offered configuration lowers.
  for (const Implementation& impl : enumerate_implementations(b.g, plan::Precision::F16, target, ConfigSpace::Full)) {
    if (impl.kind != Implementation::Kind::CoopConv || !impl.coop.config.q8 || !impl.coop.config.a_direct) continue;
    LoweringTarget named = target;
    named.conv_configs[impl.anchor->name] = impl.coop.config;
    INFO(impl.config);
    CHECK_NOTHROW(compile(b.g, plan::Precision::F16, named));
  }
}

TEST_CASE("int8 A_DIRECT emulated (COOP_EMULATE): borders, a chunk past c_in, pool, tail, against the CPU reference and staged",
          "[kernels][q8-emulate]") {
  const auto& caps = device().caps();
  if (!fp16_available(caps)) return;
  const GraphBuilder b = q8_chain();
  LoweringTarget target = q8_target(b, true, caps);
  REQUIRE(target.coop.a_rows_q8);
  target.coop_head = false;
  // One chunk a conv (64 channels), so the emulation's fragment limit does not apply
  // (q8_configs); lavapipe's 32 KB holds these with their emulated fragments.
  target.coop_tail = false;
  check_chain(device(), target, q8_ad(8, 16, 16, 2), 0);  // 4 row fragments a subgroup
  target.coop_tail = true;
  check_chain(device(), target, q8_ad(4, 16, 32, 2), 1);  // 2 a subgroup; W2 after the rows
  CHECK(device().validation_errors() == 0);
}

TEST_CASE("int8 A_DIRECT on the GPU's int8 cooperative matrices, against the CPU reference and staged", "[kernels][q8]") {
  if (!int8_coop_available()) return;
  const auto& ctx = coop_device();
  const std::string why = runtime::coop_a_rows_mismatch(ctx, compile_shader("coop_a_layout", {{"Q8", "1"}}, plan::Precision::F32), true);
  INFO("the int8 element-order check: " << (why.empty() ? "passed" : why));
  CHECK(why.empty());  // (NVIDIA's driver 580 passes: bench/RESULTS.md, 2026-11-29 seventeenth session)
  const GraphBuilder b = q8_chain();
  LoweringTarget target = q8_target(b, false, ctx.caps());
  enable_a_direct_q8(target, ctx);
  if (!target.coop.a_rows_q8) return;
  target.coop_tail = false;
  for (const CoopConvConfig& c : {q8_ad(16, 16, 32, 4), q8_ad(8, 32, 32, 4), q8_ad(16, 32, 32, 8), q8_ad(16, 16, 64, 4)})
    check_chain(ctx, target, c, 0);
  target.coop_tail = true;
  check_chain(ctx, target, q8_ad(16, 16, 32, 4), 1);
  CHECK(ctx.validation_errors() == 0);
}

// The lowering without a device: plan structure, weight packing and conversion, tiling limits,
// and the shader compiler's hashing and define handling.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>

#include "common/error.hpp"
#include "common/half.hpp"
#include "compiler/import/onnx_import.hpp"
#include "compiler/plan/plan_serialize.hpp"
#include "kernels/conv2d_layout.hpp"
#include "kernels/lower_portable.hpp"
#include "kernels/plan_builder.hpp"
#include "kernels/shader_compiler.hpp"
#include "modelgen/oidn_unet.hpp"

using namespace denox;
using namespace denox::kernels;
using Catch::Matchers::Contains;

namespace {

std::string define_of(const plan::Pipeline& p, const std::string& name) {
  for (const auto& [k, v] : p.defines)
    if (k == name) return v;
  return "";
}

}  // namespace

TEST_CASE("the OIDN U-Net lowers to one portable dispatch per conv with pad, pool, upsample, concat and crop fused",
          "[kernels][lowering]") {
  modelgen::OidnUnetOptions options;
  options.pad_to_16_and_crop = true;
  std::string bytes;
  modelgen::build_oidn_unet(options).SerializeToString(&bytes);
  const compiler::Graph g = compiler::import_onnx_bytes(bytes.data(), bytes.size());
  for (plan::Precision p : {plan::Precision::F32, plan::Precision::F16}) {
    const plan::Plan plan = build_portable_plan(g, p);
    CHECK(plan.dispatches.size() == 16);
    int pools = 0, up_concats = 0;
    for (const auto& d : plan.dispatches) {
      const auto& pipe = plan.pipelines[d.pipeline];
      CHECK(pipe.family == "conv2d");
      pools += define_of(pipe, "POOL") == "1";
      up_concats += define_of(pipe, "CONCAT") == "1" && define_of(pipe, "UPSAMPLE0") == "1";
    }
    CHECK(pools == 4);
    CHECK(up_concats == 4);
    // The Pad is read through by the first conv and the last concat; the crop is the last conv's.
    CHECK_THAT(plan.dispatches.front().name, Contains("Pad") && Contains("enc_conv0"));
    CHECK_THAT(plan.dispatches.back().name, Contains("dec_conv0") && Contains("Slice"));
    for (const auto& w : plan.weights) CHECK(w.offset % 256 == 0);
    CHECK(plan.inputs.size() == 1);
    CHECK(plan.outputs.size() == 1);
    // The plan serializes and loads back (SPIR-V is not needed for that).
    const plan::Plan loaded = plan::deserialize_plan(plan::serialize_plan(plan));
    CHECK(loaded.dispatches.size() == plan.dispatches.size());
  }
  // Without fusion: one dispatch per op (ReLUs still fused), a concat is one copy per input.
  LoweringTarget unfused;
  unfused.fuse = false;
  const plan::Plan plan = build_portable_plan(g, plan::Precision::F32, unfused);
  std::map<std::string, int> per_family;
  for (const auto& d : plan.dispatches) per_family[plan.pipelines[d.pipeline].family]++;
  CHECK(per_family["conv2d"] == 16);
  CHECK(per_family["pool2d"] == 4);
  CHECK(per_family["upsample_nearest"] == 4);
  CHECK(per_family["copy"] == 4 * 2 + 2);  // 4 concats of 2 inputs, the crop (a Slice on H, one on W)
  CHECK(per_family["pad"] == 1);
  CHECK(per_family.count("unary") == 0);  // every ReLU fused
}

TEST_CASE("float_to_half rounds to nearest even and keeps specials", "[kernels][lowering]") {
  CHECK(float_to_half(0.0f) == 0x0000);
  CHECK(float_to_half(-0.0f) == 0x8000);
  CHECK(float_to_half(1.0f) == 0x3c00);
  CHECK(float_to_half(-2.5f) == 0xc100);
  CHECK(float_to_half(65504.0f) == 0x7bff);
  CHECK(float_to_half(65520.0f) == 0x7c00);                // rounds up to infinity
  CHECK(float_to_half(1.0f + 1.0f / 2048) == 0x3c00);      // halfway: to even
  CHECK(float_to_half(1.0f + 3.0f / 2048) == 0x3c02);      // halfway: to even (up)
  CHECK(float_to_half(std::ldexp(1.0f, -24)) == 0x0001);   // smallest subnormal
  CHECK(float_to_half(std::ldexp(1.0f, -26)) == 0x0000);   // below half of it
  CHECK(float_to_half(INFINITY) == 0x7c00);
  CHECK((float_to_half(NAN) & 0x7c00) == 0x7c00);
  CHECK((float_to_half(NAN) & 0x03ff) != 0);
}

// A window no tile fits (the importer's largest: stride 4096) is refused naming the stride, the
// bytes it needs and the budget; it blamed the dilation alone.
TEST_CASE("conv2d tiling refuses a window no tile fits, naming stride, dilation and bytes", "[kernels][lowering]") {
  for (const Conv2dShape& s : {Conv2dShape{3, 4, 3, 3, 4096, 4096, 1, 1}, Conv2dShape{3, 4, 3, 3, 1, 1, 4096, 4096}}) {
    try {
      (void)choose_conv2d_tiling(s);
      FAIL("tiled");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::Unsupported);
      const std::string want = "stride " + std::to_string(s.sh) + "x" + std::to_string(s.sw) + " and dilation " + std::to_string(s.dh) +
                               "x" + std::to_string(s.dw) + " needs ";
      CHECK_THAT(e.what(), Catch::Contains(want) && Catch::Contains("may use " + std::to_string(kPortableSharedBytes)));
    }
  }
}

TEST_CASE("conv2d tiling fits the portable shared-memory budget and packing places every weight", "[kernels][lowering]") {
  for (const Conv2dShape& s : {Conv2dShape{3, 32, 3, 3}, Conv2dShape{112, 96, 3, 3}, Conv2dShape{17, 3, 1, 1},
                               Conv2dShape{64, 64, 7, 7, 1, 1, 3, 3}, Conv2dShape{5, 9, 5, 3, 2, 3, 2, 1}}) {
    const Conv2dTiling t = choose_conv2d_tiling(s);
    CHECK(t.shared_bytes(s) <= kPortableSharedBytes);
    CHECK(32 % t.tile_w == 0);
    std::vector<float> w(static_cast<size_t>(s.c_out * s.c_in * s.kh * s.kw));
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i + 1);
    const std::vector<float> packed = pack_conv2d_weights(w, s, t);
    // Every weight appears exactly once; the rest is zero padding.
    double sum = 0;
    size_t nonzero = 0;
    for (float v : packed) sum += v, nonzero += v != 0.0f;
    CHECK(nonzero == w.size());
    CHECK(sum == Approx(w.size() * (w.size() + 1) / 2.0));
    // W[co][ci][ky][kx] sits at [co_tile][chunk][ci % ck][ky * kw + kx][co % cout_tile].
    const int64_t co = s.c_out - 1, ci = s.c_in - 1, k = s.kh * s.kw - 1, chunks = (s.c_in + t.ck - 1) / t.ck;
    const int64_t at = (((co / t.cout_tile() * chunks + ci / t.ck) * t.ck + ci % t.ck) * s.kh * s.kw + k) * t.cout_tile() +
                       co % t.cout_tile();
    CHECK(packed[static_cast<size_t>(at)] == w.back());
  }
}

TEST_CASE("shader hashes follow source, defines and precision, and STORAGE_F16 is the precision's", "[kernels][shaders]") {
  const Defines d = {{"ACT", "1"}};
  CHECK(shader_source_hash("unary", d) == shader_source_hash("unary", d));
  CHECK(shader_source_hash("unary", d) != shader_source_hash("unary", {{"ACT", "2"}}));
  CHECK(shader_source_hash("unary", d) != shader_source_hash("unary", d, plan::Precision::F16));
  CHECK(shader_source_hash("unary", d) != shader_source_hash("binary", d));
  CHECK(shader_source_hash("unary", d).size() == 32);
  CHECK_THROWS_WITH(effective_defines({{"STORAGE_F16", "1"}}, plan::Precision::F32), Contains("precision"));
  // Values are one number or name: a plan file's defines cannot make glslang expand
  // exponentially ("A1 A1", "A2 A2", ...), nor carry a line break into the preamble.
  CHECK(effective_defines({{"Y_ZP", "-3"}, {"SCALE", "1.5e-3"}, {"FORMAT", "rgba16f"}}, plan::Precision::F32).size() == 3);
  for (const char* value : {"A1 A1", "1\n#error", "x\\", "(1)", "0123456789012345678901234567890123456789012345678901234567890123456789"})
    CHECK_THROWS_WITH(effective_defines({{"HAS_BIAS", value}}, plan::Precision::F32), Contains("not one number or name"));
  const auto [rest, precision] = split_storage_define({{"FORMAT", "rgba16f"}, {"STORAGE_F16", "1"}});
  CHECK(rest == Defines{{"FORMAT", "rgba16f"}});
  CHECK(precision == plan::Precision::F16);
  CHECK_THROWS_WITH(compile_shader("no_such_family", {}, plan::Precision::F32), Contains("conv2d"));
  // A compile error names the family and the defines.
  CHECK_THROWS_WITH(compile_shader("conv2d", {{"KH", "3"}}, plan::Precision::F32), Contains("conv2d") && Contains("KH=3"));
}

// The io adapters: the caller's buffers (CHW / HWC, fp32 / fp16, channel sub-ranges, offsets)
// and storage images (RGBA16F / RGBA32F) as network inputs and outputs.
#include <catch2/catch.hpp>

#include <cstring>

#include "../kernels/graph_builder.hpp"
#include "common/half.hpp"
#include "gpu_test_support.hpp"
#include "runtime/reference/reference_executor.hpp"
#include "test_image.hpp"

using namespace denox;
using namespace denox::testing;
using runtime::ElementType;
using runtime::IoSource;
using runtime::TensorLayout;

namespace {

constexpr int64_t kH = 37, kW = 53;  // an odd pixel count: fp16 planes straddle 32-bit words
// A width that is a multiple of 4: the adapters' 4-pixels-per-invocation path (by4) for CHW.
constexpr int64_t kW4 = 52;

// A caller's tensor of `channels` channels per pixel in its own layout and type, in a device
// buffer at `offset` bytes.
struct CallerTensor {
  HostTensor values;  // 1 x channels x H x W, as the caller means them
  TensorLayout layout;
  ElementType type;
  VkDeviceSize offset;
  runtime::Buffer buffer;

  int64_t h() const { return values.shape[2]; }
  int64_t w() const { return values.shape[3]; }
  size_t element(int64_t c, int64_t y, int64_t x) const {
    const int64_t channels = values.shape[1];
    return static_cast<size_t>(layout == TensorLayout::CHW ? (c * h() + y) * w() + x : (y * w() + x) * channels + c);
  }
  size_t bytes() const { return values.f32.size() * (type == ElementType::F16 ? 2 : 4); }

  CallerTensor(HostTensor v, TensorLayout l, ElementType t, VkDeviceSize off)
      : values(std::move(v)), layout(l), type(t), offset(off), buffer(device_buffer(off + bytes() + 4)) {
    std::vector<uint8_t> data(bytes());
    for (int64_t c = 0; c < values.shape[1]; ++c)
      for (int64_t y = 0; y < h(); ++y)
        for (int64_t x = 0; x < w(); ++x) {
          const float v = values.f32[static_cast<size_t>((c * h() + y) * w() + x)];
          if (type == ElementType::F16) {
            const uint16_t h = float_to_half(v);
            std::memcpy(data.data() + 2 * element(c, y, x), &h, 2);
          } else {
            std::memcpy(data.data() + 4 * element(c, y, x), &v, 4);
          }
        }
    runtime::upload(device(), buffer.handle(), offset, data.data(), data.size());
  }

  // Reads the buffer back into `values`.
  void read_back() {
    std::vector<uint8_t> data(bytes());
    runtime::download(device(), buffer.handle(), offset, data.data(), data.size());
    for (int64_t c = 0; c < values.shape[1]; ++c)
      for (int64_t y = 0; y < h(); ++y)
        for (int64_t x = 0; x < w(); ++x) {
          float v;
          if (type == ElementType::F16) {
            uint16_t h;
            std::memcpy(&h, data.data() + 2 * element(c, y, x), 2);
            v = half_to_float(h);
          } else {
            std::memcpy(&v, data.data() + 4 * element(c, y, x), 4);
          }
          values.f32[static_cast<size_t>((c * h() + y) * w() + x)] = v;
        }
  }

  // Network channels [first, first + count) are the caller's channels [caller_first, ...).
  IoSource source(uint32_t first, uint32_t count, uint32_t caller_first) const {
    IoSource s;
    s.first_channel = first;
    s.channel_count = count;
    s.buffer = buffer.handle();
    s.offset = offset;
    s.layout = layout;
    s.type = type;
    s.pixel_channels = static_cast<uint32_t>(values.shape[1]);
    s.source_first_channel = caller_first;
    return s;
  }
};

// Channels [from, from + count) of t.
HostTensor channels(const HostTensor& t, int64_t from, int64_t count) {
  HostTensor out;
  out.shape = {1, count, t.shape[2], t.shape[3]};
  const size_t plane = static_cast<size_t>(t.shape[2] * t.shape[3]);
  out.f32.assign(t.f32.begin() + static_cast<ptrdiff_t>(from * plane), t.f32.begin() + static_cast<ptrdiff_t>((from + count) * plane));
  return out;
}

HostTensor concat_channels(const std::vector<HostTensor>& parts) {
  HostTensor out = parts.at(0);
  for (size_t i = 1; i < parts.size(); ++i) {
    out.shape[1] += parts[i].shape[1];
    out.f32.insert(out.f32.end(), parts[i].f32.begin(), parts[i].f32.end());
  }
  return out;
}

}  // namespace

namespace {

// Every layout x type on `ctx` for the given plan precisions (see the test cases below).
void check_buffer_adapters(const runtime::DeviceContext& ctx, const std::vector<plan::Precision>& precisions) {
  GraphBuilder b;
  compiler::ActivationAttrs relu;
  b.output(b.activation("relu", b.input("x", 5), relu));
  for (plan::Precision precision : precisions) {
    runtime::ExecutableModel model(ctx, compiled_plan(b.g, precision), VK_NULL_HANDLE, adapter_compiler(), false);
    for (int64_t width : {kW, kW4}) {
      model.set_extent(static_cast<uint32_t>(width), kH);
      for (TensorLayout layout : {TensorLayout::CHW, TensorLayout::HWC}) {
        for (ElementType type : {ElementType::F32, ElementType::F16}) {
          INFO("plan " << plan::precision_name(precision) << ", caller " << (layout == TensorLayout::CHW ? "CHW" : "HWC") << " "
                       << (type == ElementType::F16 ? "fp16" : "fp32") << ", width " << width);
          // Network channels 0..1 are channels 4..5 of a 7-channel tensor; 2..4 are channels 0..2
          // of a 3-channel tensor that starts 256 bytes into its buffer.
          CallerTensor a(random_tensor({1, 7, kH, width}, 1), layout, type, 0);
          CallerTensor c(random_tensor({1, 3, kH, width}, 2), layout, type, 256);
          model.bind_input(0, {a.source(0, 2, 4), c.source(2, 3, 0)});
          // The output goes to channels 3..7 of an 8-channel tensor whose channels 0..2 hold 7.0.
          HostTensor sentinel;
          sentinel.shape = {1, 8, kH, width};
          sentinel.f32.assign(sentinel.element_count(), 7.0f);
          CallerTensor out(sentinel, layout, type, 0);
          model.bind_output(0, {out.source(0, 5, 3)});
          // Channels 2..4 start two planes into the tensor. Where that offset suits a
          // descriptor, each adapter binds only its own channels and the two run unordered;
          // otherwise both bind the whole tensor with a barrier between them (record.cpp).
          const uint64_t second = 2 * uint64_t{kH} * static_cast<uint64_t>(width) * plan::element_size(precision);
          REQUIRE(model.input_adapter_count() == 2);
          CHECK(model.barrier_before(1) == !binds_only_its_part(ctx, second));
          runtime::submit_and_wait(device(), "io test", [&](VkCommandBuffer cmd) { model.record(cmd); });
          out.read_back();

          // What the network saw: the caller's values after their own type's rounding.
          a.read_back();
          c.read_back();
          const HostTensor x = concat_channels({channels(a.values, 4, 2), channels(c.values, 0, 3)});
          const HostTensor expected = reference::run_reference(b.g, {x})[0];
          const bool exact = precision == plan::Precision::F32 && type == ElementType::F32;
          CHECK(relative_l2(channels(out.values, 3, 5), expected) <= (exact ? 0.0 : 1e-3));
          CHECK(channels(out.values, 0, 3).f32 == channels(sentinel, 0, 3).f32);
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("buffer adapters: CHW and HWC, fp32 and fp16, channel sub-ranges and offsets, outputs keep the caller's other channels",
          "[runtime][io]") {
  SECTION("fp16 caller buffers as 16-bit elements (the device has 16-bit storage)") {
    check_buffer_adapters(device(), {plan::Precision::F32, plan::Precision::F16});
  }
  SECTION("fp16 caller buffers as 32-bit words (a device without 16-bit storage)") {
    check_buffer_adapters(*engine_context(false), {plan::Precision::F32});
  }
  CHECK(device().validation_errors() == 0);
}

TEST_CASE("a caller buffer in the plan's own layout is bound in the tensor's place (no adapter), and in place the input is read first",
          "[runtime][io]") {
  GraphBuilder b;
  // A 3x3 conv reads neighbours: an output written over the input too early would show.
  b.output(b.conv("conv", b.input("x", 5), 5, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 3));
  auto adapters = [](const runtime::ExecutableModel& m) {
    int n = 0;
    for (const std::string& name : m.command_names()) n += name.rfind("input '", 0) == 0 || name.rfind("output '", 0) == 0;
    return n;
  };
  for (plan::Precision precision : {plan::Precision::F32, plan::Precision::F16}) {
    if (precision == plan::Precision::F16 && !device().caps().fp16_usable()) continue;
    runtime::ExecutableModel model(device(), compiled_plan(b.g, precision), VK_NULL_HANDLE, adapter_compiler(), false);
    model.set_extent(kW, kH);
    const ElementType own = precision == plan::Precision::F16 ? ElementType::F16 : ElementType::F32;
    const ElementType other = own == ElementType::F16 ? ElementType::F32 : ElementType::F16;
    for (ElementType type : {own, other}) {
      const double tolerance = precision == plan::Precision::F32 && type == ElementType::F32 ? 1e-5 : 1e-2;
      INFO("plan " << plan::precision_name(precision) << ", caller " << (type == ElementType::F16 ? "fp16" : "fp32") << " CHW");
      CallerTensor in(random_tensor({1, 5, kH, kW}, 4), TensorLayout::CHW, type, 256);
      HostTensor zeros;
      zeros.shape = {1, 5, kH, kW};
      zeros.f32.assign(zeros.element_count(), 0.0f);
      CallerTensor out(zeros, TensorLayout::CHW, type, 0);
      model.bind_input(0, {in.source(0, 5, 0)});
      model.bind_output(0, {out.source(0, 5, 0)});
      CHECK(adapters(model) == (type == own ? 0 : 2));
      runtime::submit_and_wait(device(), "direct io test", [&](VkCommandBuffer cmd) { model.record(cmd); });
      in.read_back();
      out.read_back();
      CHECK(relative_l2(out.values, reference::run_reference(b.g, {in.values})[0]) <= tolerance);
    }
    // Denoising in place: one buffer for both. The input is bound directly, the output keeps its
    // adapter (after every dispatch).
    CallerTensor both(random_tensor({1, 5, kH, kW}, 5), TensorLayout::CHW, own, 0);
    both.read_back();  // the values as stored (fp16 rounding)
    const HostTensor expected = reference::run_reference(b.g, {both.values})[0];
    model.bind_input(0, {both.source(0, 5, 0)});
    model.bind_output(0, {both.source(0, 5, 0)});
    CHECK(adapters(model) == 1);
    runtime::submit_and_wait(device(), "in-place io test", [&](VkCommandBuffer cmd) { model.record(cmd); });
    both.read_back();
    CHECK(relative_l2(both.values, expected) <= (precision == plan::Precision::F32 ? 1e-5 : 1e-2));
  }
  CHECK(device().validation_errors() == 0);
}

TEST_CASE("buffer ranges: an exact fp16 range with an odd element count works, a short one is refused", "[runtime][io]") {
  GraphBuilder b;
  compiler::ActivationAttrs relu;
  b.output(b.activation("relu", b.input("x", 3), relu));
  for (bool with_16bit : {true, false}) {
    INFO((with_16bit ? "16-bit elements" : "32-bit words"));
    const auto ctx = engine_context(with_16bit);
    runtime::ExecutableModel model(*ctx, compiled_plan(b.g, plan::Precision::F32), VK_NULL_HANDLE, adapter_compiler(), false);
    model.set_extent(kW, kH);
    // 3 x 37 x 53 fp16 values: an odd count, so the last 32-bit word is half outside the data.
    const VkDeviceSize exact = 3 * kH * kW * 2, needed = with_16bit ? exact : exact + 2;
    CallerTensor in(random_tensor({1, 3, kH, kW}, 3), TensorLayout::HWC, ElementType::F16, 0);
    HostTensor zeros;
    zeros.shape = {1, 3, kH, kW};
    zeros.f32.assign(zeros.element_count(), 0.0f);
    CallerTensor out(zeros, TensorLayout::HWC, ElementType::F16, 0);
    IoSource short_range = in.source(0, 3, 0);
    short_range.range = needed - 2;
    CHECK_THROWS_WITH(model.bind_input(0, {short_range}), Catch::Matchers::Contains(std::to_string(needed) + " bytes"));
    IoSource in_source = in.source(0, 3, 0), out_source = out.source(0, 3, 0);
    in_source.range = out_source.range = needed;
    model.bind_input(0, {in_source});
    model.bind_output(0, {out_source});
    runtime::submit_and_wait(device(), "range test", [&](VkCommandBuffer cmd) { model.record(cmd); });
    out.read_back();
    in.read_back();
    CHECK(relative_l2(out.values, reference::run_reference(b.g, {in.values})[0]) == 0.0);
    // A larger extent no longer fits the bound ranges: record() refuses and says why.
    model.set_extent(kW + 1, kH);
    CHECK_THROWS_WITH(runtime::submit_and_wait(device(), "short", [&](VkCommandBuffer cmd) { model.record(cmd); }),
                      Catch::Matchers::Contains("buffer range"));
  }
  CHECK(device().validation_errors() == 0);
}

TEST_CASE("storage images: 9 input channels from three RGBA images, the output into RGBA32F and RGBA16F images",
          "[runtime][io]") {
  GraphBuilder b;
  b.output(b.conv("conv", b.input("x", 9), 3, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 3));
  runtime::ExecutableModel model(device(), compiled_plan(b.g, plan::Precision::F32), VK_NULL_HANDLE, adapter_compiler(), false);
  // An odd width (planes not 16-byte multiples) and one whose planes are.
  for (int64_t width : {kW, kW4}) {
    INFO("width " << width);
    model.set_extent(static_cast<uint32_t>(width), kH);

    // color and normal as RGBA16F, albedo as RGBA32F; the alpha channels hold values the
    // network must not read.
    const VkFormat formats[3] = {VK_FORMAT_R16G16B16A16_SFLOAT, VK_FORMAT_R32G32B32A32_SFLOAT, VK_FORMAT_R16G16B16A16_SFLOAT};
    std::vector<std::unique_ptr<TestImage>> images;
    std::vector<HostTensor> parts;
    std::vector<IoSource> sources;
    for (int i = 0; i < 3; ++i) {
      const std::vector<float> rgba = random_values(kH * width * 4, 40 + i);
      images.push_back(std::make_unique<TestImage>(width, kH, formats[i]));
      images.back()->upload(rgba);
      const std::vector<float> seen = images.back()->download();  // after the format's rounding
      HostTensor part;
      part.shape = {1, 3, kH, width};
      part.f32.resize(part.element_count());
      for (int64_t p = 0; p < kH * width; ++p)
        for (int64_t c = 0; c < 3; ++c) part.f32[static_cast<size_t>(c * kH * width + p)] = seen[static_cast<size_t>(p * 4 + c)];
      parts.push_back(std::move(part));
      IoSource s;
      s.first_channel = static_cast<uint32_t>(3 * i);
      s.channel_count = 3;
      s.is_image = true;
      s.view = images.back()->view();
      s.format = formats[i];
      sources.push_back(s);
    }
    model.bind_input(0, sources);
    const HostTensor expected = reference::run_reference(b.g, {concat_channels(parts)})[0];

    for (VkFormat format : {VK_FORMAT_R32G32B32A32_SFLOAT, VK_FORMAT_R16G16B16A16_SFLOAT}) {
      INFO("output format " << format);
      TestImage out(width, kH, format);
      IoSource s;
      s.channel_count = 3;
      s.is_image = true;
      s.view = out.view();
      s.format = format;
      model.bind_output(0, {s});
      // Channels 3..5 and 6..8 start 3 and 6 fp32 planes into the tensor: bound on their own
      // (no barriers between the adapters) where those offsets suit a descriptor (record.cpp).
      const uint64_t plane = uint64_t{kH} * static_cast<uint64_t>(width) * 4;
      REQUIRE(model.input_adapter_count() == 3);
      CHECK(model.barrier_before(1) == !binds_only_its_part(device(), 3 * plane));
      CHECK(model.barrier_before(2) == !binds_only_its_part(device(), 6 * plane));
      runtime::submit_and_wait(device(), "image io test", [&](VkCommandBuffer cmd) { model.record(cmd); });
      const std::vector<float> rgba = out.download();
      HostTensor rgb;
      rgb.shape = expected.shape;
      rgb.f32.resize(rgb.element_count());
      bool alpha_one = true;
      for (int64_t p = 0; p < kH * width; ++p) {
        for (int64_t c = 0; c < 3; ++c) rgb.f32[static_cast<size_t>(c * kH * width + p)] = rgba[static_cast<size_t>(p * 4 + c)];
        alpha_one = alpha_one && rgba[static_cast<size_t>(p * 4 + 3)] == 1.0f;
      }
      CHECK(relative_l2(rgb, expected) <= (format == VK_FORMAT_R16G16B16A16_SFLOAT ? 1e-3 : 1e-5));
      CHECK(alpha_one);
    }
  }
  CHECK(device().validation_errors() == 0);
}

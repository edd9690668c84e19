// A thin RAII layer over the C API (denox.h): handles that destroy themselves, and failures as
// exceptions (denox::ApiError carries the result code, denox_last_error()'s message and
// denox_last_vk_result()).
// Header-only; it adds no symbols to libdenox.
#pragma once

#include <denox/denox.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace denox {

class ApiError : public std::runtime_error {
 public:
  explicit ApiError(denox_result result)
      : std::runtime_error(std::string(denox_result_name(result)) + ": " + denox_last_error()),
        result_(result),
        vk_result_(denox_last_vk_result()) {}
  denox_result result() const { return result_; }
  // The failed Vulkan call's result behind a DENOX_ERROR_VULKAN (VK_ERROR_DEVICE_LOST, ...).
  VkResult vk_result() const { return vk_result_; }

 private:
  denox_result result_;
  VkResult vk_result_;
};

inline void check(denox_result r) {
  if (r != DENOX_SUCCESS) throw ApiError(r);
}

// Move-only owner of a C handle.
template <typename Handle, void (*Destroy)(Handle)>
class Owned {
 public:
  Owned() = default;
  explicit Owned(Handle h) : h_(h) {}
  Owned(Owned&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Owned& operator=(Owned&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() { reset(); }
  void reset() {
    if (h_ != nullptr) Destroy(h_);
    h_ = nullptr;
  }
  Handle get() const { return h_; }
  explicit operator bool() const { return h_ != nullptr; }

 private:
  Handle h_ = nullptr;
};

class Model;

// An int8 calibration (denox.h, "int8 calibration"): made from sample inputs or loaded from the
// bytes save() gave; pass get() as denox_model_options::calibration.
class Calibration {
 public:
  Calibration() = default;
  static Calibration from_samples(const std::string& onnx_path, const std::vector<denox_calibration_sample>& samples) {
    denox_calibration c = nullptr;
    check(denox_calibrate_file(onnx_path.c_str(), samples.data(), static_cast<uint32_t>(samples.size()), &c));
    return Calibration(c);
  }
  static Calibration from_bytes(const void* bytes, size_t size) {
    denox_calibration c = nullptr;
    check(denox_calibration_load(bytes, size, &c));
    return Calibration(c);
  }
  std::string save() const {
    size_t size = 0;
    check(denox_calibration_save(get(), nullptr, &size));
    std::string bytes(size, '\0');
    check(denox_calibration_save(get(), bytes.data(), &size));
    return bytes;
  }
  std::string model_hash() const { return denox_calibration_model_hash(get()); }
  denox_calibration get() const { return h_.get(); }

 private:
  explicit Calibration(denox_calibration c) : h_(c) {}
  using Handle = Owned<denox_calibration, denox_calibration_destroy>;
  Handle h_;
};

class Context {
 public:
  Context() = default;
  // The engine's device.
  explicit Context(const denox_vulkan_device& device, const denox_context_options* options = nullptr) {
    denox_context c = nullptr;
    check(denox_context_create(&device, options, &c));
    h_ = Handle(c);
  }
  // denox's own device (tools, tests).
  static Context headless(int device_index = -1, bool validation = false, const denox_context_options* options = nullptr) {
    denox_context c = nullptr;
    check(denox_context_create_headless(device_index, validation ? 1 : 0, options, &c));
    Context ctx;
    ctx.h_ = Handle(c);
    return ctx;
  }
  denox_context get() const { return h_.get(); }
  denox_context_info info() const {
    denox_context_info i{};
    check(denox_context_get_info(get(), &i));
    return i;
  }
  denox_stats stats() const {
    denox_stats s{};
    check(denox_context_get_stats(get(), &s));
    return s;
  }
  void input_barrier(VkCommandBuffer cmd, VkPipelineStageFlags2 src_stage, VkAccessFlags2 src_access) const {
    denox_cmd_input_barrier(get(), cmd, src_stage, src_access);
  }
  void output_barrier(VkCommandBuffer cmd, VkPipelineStageFlags2 dst_stage, VkAccessFlags2 dst_access) const {
    denox_cmd_output_barrier(get(), cmd, dst_stage, dst_access);
  }

  // Holds denox_context_lock_queue for its lifetime: around the caller's own submits to a
  // headless context's queue while models work in the background.
  class QueueLock {
   public:
    explicit QueueLock(denox_context c) : c_(c) { denox_context_lock_queue(c_); }
    ~QueueLock() { denox_context_unlock_queue(c_); }
    QueueLock(const QueueLock&) = delete;
    QueueLock& operator=(const QueueLock&) = delete;

   private:
    denox_context c_;
  };
  [[nodiscard]] QueueLock lock_queue() const { return QueueLock(get()); }

 private:
  using Handle = Owned<denox_context, denox_context_destroy>;
  Handle h_;
};

class Model {
 public:
  Model() = default;
  static Model from_file(const Context& ctx, const std::string& path, const denox_model_options* options = nullptr) {
    denox_model m = nullptr;
    check(denox_model_load_file(ctx.get(), path.c_str(), options, &m));
    return Model(m);
  }
  static Model from_memory(const Context& ctx, const void* bytes, size_t size, const denox_model_options* options = nullptr) {
    denox_model m = nullptr;
    check(denox_model_load_memory(ctx.get(), bytes, size, options, &m));
    return Model(m);
  }
  static Model from_plan(const Context& ctx, const void* bytes, size_t size, const denox_model_options* options = nullptr) {
    denox_model m = nullptr;
    check(denox_model_load_plan(ctx.get(), bytes, size, options, &m));
    return Model(m);
  }
  // A model uses its context until it is destroyed: a temporary context (destroyed at the end of
  // the statement) does not compile.
  static Model from_file(const Context&&, const std::string&, const denox_model_options* = nullptr) = delete;
  static Model from_memory(const Context&&, const void*, size_t, const denox_model_options* = nullptr) = delete;
  static Model from_plan(const Context&&, const void*, size_t, const denox_model_options* = nullptr) = delete;
  denox_model get() const { return h_.get(); }
  std::vector<uint8_t> export_plan() const {
    size_t size = 0;
    check(denox_model_export_plan(get(), nullptr, &size));
    std::vector<uint8_t> bytes(size);
    check(denox_model_export_plan(get(), bytes.data(), &size));
    return bytes;
  }
  std::string schedule_report() const {
    size_t size = 0;
    check(denox_model_schedule_report(get(), nullptr, &size));
    std::string json(size, '\0');
    check(denox_model_schedule_report(get(), json.data(), &size));
    json.resize(size ? size - 1 : 0);
    return json;
  }
  uint32_t input_count() const { return denox_model_input_count(get()); }
  uint32_t output_count() const { return denox_model_output_count(get()); }
  denox_tensor_info tensor_info(denox_io_kind kind, uint32_t index) const {
    denox_tensor_info i{};
    check(denox_model_get_tensor_info(get(), kind, index, &i));
    return i;
  }
  denox_precision precision() const { return denox_model_precision(get()); }
  uint32_t int8_dispatch_count() const { return denox_model_int8_dispatch_count(get()); }
  void set_extent(uint32_t width, uint32_t height) { check(denox_model_set_extent(get(), width, height)); }
  denox_memory_requirements memory_requirements(uint32_t width, uint32_t height) {  // (remembers the plan it reported)
    denox_memory_requirements r{};
    check(denox_model_memory_requirements(get(), width, height, &r));
    return r;
  }
  void bind_memory(VkBuffer scratch, VkDeviceSize scratch_offset, VkDeviceSize scratch_size, VkBuffer weights,
                   VkDeviceSize weights_offset) {
    check(denox_model_bind_memory(get(), scratch, scratch_offset, scratch_size, weights, weights_offset));
  }
  void bind_scratch(VkBuffer scratch, VkDeviceSize scratch_offset, VkDeviceSize scratch_size) {
    check(denox_model_bind_scratch(get(), scratch, scratch_offset, scratch_size));
  }
  void bind_input(uint32_t index, const std::vector<denox_binding>& bindings) {
    check(denox_model_bind_input(get(), index, bindings.data(), static_cast<uint32_t>(bindings.size())));
  }
  void bind_output(uint32_t index, const std::vector<denox_binding>& bindings) {
    check(denox_model_bind_output(get(), index, bindings.data(), static_cast<uint32_t>(bindings.size())));
  }
  // Not const: a record() call is a frame boundary (it may swap in a background plan).
  void record(VkCommandBuffer cmd) { check(denox_model_record(get(), cmd)); }
  void record_timed(VkCommandBuffer cmd, VkQueryPool pool, bool serialize) {
    check(denox_model_record_timed(get(), cmd, pool, serialize ? 1 : 0));
  }
  uint32_t dispatch_count() const { return denox_model_dispatch_count(get()); }
  std::string dispatch_name(uint32_t i) const { return denox_model_dispatch_name(get(), i); }

  // Background tuning and hot reload (see denox.h). status() may be called from any thread.
  denox_model_status status() const {
    denox_model_status s{};
    check(denox_model_get_status(get(), &s));
    return s;
  }
  void reload_file(const std::string& path) { check(denox_model_reload_file(get(), path.c_str())); }
  void reload_memory(const void* bytes, size_t size) { check(denox_model_reload_memory(get(), bytes, size)); }
  void watch_file(const std::string& path) { check(denox_model_watch_file(get(), path.c_str())); }
  void stop_watching() { check(denox_model_watch_file(get(), nullptr)); }

 private:
  explicit Model(denox_model m) : h_(m) {}
  using Handle = Owned<denox_model, denox_model_destroy>;
  Handle h_;
};

// A buffer binding of channels [first, first + count) in a caller tensor of `pixel_channels`.
inline denox_binding buffer_binding(uint32_t first, uint32_t count, VkBuffer buffer, VkDeviceSize offset, denox_layout layout,
                                    denox_dtype dtype, uint32_t pixel_channels, uint32_t buffer_first_channel = 0) {
  denox_binding b{};
  b.first_channel = first;
  b.channel_count = count;
  b.buffer = buffer;
  b.offset = offset;
  b.range = VK_WHOLE_SIZE;
  b.layout = layout;
  b.dtype = dtype;
  b.pixel_channels = pixel_channels;
  b.buffer_first_channel = buffer_first_channel;
  return b;
}

// A storage image binding (VK_IMAGE_LAYOUT_GENERAL) of channels [first, first + count).
inline denox_binding image_binding(uint32_t first, uint32_t count, VkImageView view, VkFormat format) {
  denox_binding b{};
  b.first_channel = first;
  b.channel_count = count;
  b.image_view = view;
  b.image_format = format;
  return b;
}

}  // namespace denox

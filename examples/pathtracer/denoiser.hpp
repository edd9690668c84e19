// Everything the path tracer does with denox, through the public C API (denox.h) only: a context
// on the renderer's device, the model in memory the renderer owns (external_memory), bindings of
// the renderer's AOV images, recording into the renderer's command buffer, and hot reload: the
// model file is polled between frames; a changed file is loaded on a worker thread while the old
// model keeps denoising, and swapped in once it is ready.
#pragma once

#include "renderer.hpp"  // first: volk before the vulkan.h of denox.h

#include <denox/denox.h>

#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <string>

namespace pathtracer {

class Denoiser {
 public:
  // Loads `model_path` now (blocking); throws std::runtime_error with denox's message.
  // DENOX_PRECISION_INT8 takes the model's calibration file (`denox calibrate`); the file is
  // read once, so a reload of an edited model fails (the running model stays) until the
  // example is restarted with a calibration of the new model.
  Denoiser(const Device& dev, std::string model_path, denox_precision precision, const std::string& calibration_path = "");
  ~Denoiser();
  Denoiser(const Denoiser&) = delete;
  Denoiser& operator=(const Denoiser&) = delete;

  // The renderer's images for the current resolution: set_extent, scratch memory, bindings.
  // No command buffer that recorded the model may be pending.
  void configure(const Aovs& in, const Image& out);
  // Between frames (nothing pending): swaps in a finished reload, or starts one when the file
  // changed. `wait`: block until a reload in flight has finished. True when a new model is in.
  bool poll(bool wait = false);
  // In `cmd` after the path tracer's dispatches: the input barrier and denox's dispatches. The
  // caller records denox_cmd_output_barrier (see record_output_barrier) before reading `out`.
  void record(VkCommandBuffer cmd) const;
  void record_output_barrier(VkCommandBuffer cmd) const;

  uint32_t input_channels() const;
  const char* precision_name() const;
  int reloads() const { return reloads_; }

 private:
  // A model with the memory it was bound to (external memory mode: the renderer allocates it).
  struct Slot {
    denox_model model = nullptr;
    std::unique_ptr<Buffer> weights, scratch;
    ~Slot();
  };
  struct FileStamp {
    std::filesystem::file_time_type mtime{};
    uintmax_t size = 0;
    bool operator==(const FileStamp&) const = default;
  };
  struct LoadResult {
    denox_model model = nullptr;
    std::string error;
    FileStamp stamp;
  };
  LoadResult load(FileStamp stamp) const;  // runs on the worker thread: touches no queue
  void apply(Slot& slot);                  // extent, memory and bindings of the current configuration
  bool stamp_now(FileStamp& out) const;

  const Device& dev_;
  std::string path_;
  denox_precision precision_;
  denox_calibration calibration_ = nullptr;  // INT8 only
  denox_context ctx_ = nullptr;
  std::unique_ptr<Slot> slot_;
  FileStamp loaded_, failed_;
  std::future<LoadResult> pending_;
  const Aovs* in_ = nullptr;
  const Image* out_ = nullptr;
  int reloads_ = 0;
};

}  // namespace pathtracer

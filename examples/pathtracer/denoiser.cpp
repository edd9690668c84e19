#include "denoiser.hpp"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace pathtracer {

namespace {

void dx(denox_result r, const char* what) {
  if (r != DENOX_SUCCESS)
    throw std::runtime_error(std::string(what) + ": " + denox_result_name(r) + ": " + denox_last_error());
}

}  // namespace

Denoiser::Slot::~Slot() {
  denox_model_destroy(model);  // before its buffers (members) go
}

Denoiser::Denoiser(const Device& dev, std::string model_path, denox_precision precision, const std::string& calibration_path)
    : dev_(dev), path_(std::move(model_path)), precision_(precision) {
  if (!calibration_path.empty()) {
    std::ifstream in(calibration_path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read the calibration '" + calibration_path + "'");
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    dx(denox_calibration_load(bytes.data(), bytes.size(), &calibration_), "denox_calibration_load");
  }
  const denox_vulkan_device device = dev.as_denox();
  if (denox_context_create(&device, nullptr, &ctx_) != DENOX_SUCCESS) {
    const std::string error = denox_last_error();
    denox_calibration_destroy(calibration_);
    throw std::runtime_error("denox_context_create: " + error);
  }
  try {
    if (!stamp_now(loaded_)) throw std::runtime_error("model '" + path_ + "' is not a readable file");
    LoadResult r = load(loaded_);
    if (!r.model) throw std::runtime_error(r.error);
    slot_ = std::make_unique<Slot>();
    slot_->model = r.model;
  } catch (...) {
    denox_context_destroy(ctx_);
    denox_calibration_destroy(calibration_);
    throw;
  }
}

Denoiser::~Denoiser() {
  if (pending_.valid()) denox_model_destroy(pending_.get().model);  // a reload nobody will use
  slot_.reset();
  denox_context_destroy(ctx_);
  denox_calibration_destroy(calibration_);
}

bool Denoiser::stamp_now(FileStamp& out) const {
  std::error_code ec;
  const auto mtime = std::filesystem::last_write_time(path_, ec);
  if (ec) return false;
  const auto size = std::filesystem::file_size(path_, ec);
  if (ec) return false;
  out = {mtime, size};
  return true;
}

// The worker thread's part. With external_memory denox allocates nothing and uploads nothing at
// load time, so the load never touches the queue the render thread is submitting to (the queue
// is externally synchronized); bind_memory uploads the weights later, on the render thread.
Denoiser::LoadResult Denoiser::load(FileStamp stamp) const {
  denox_model_options options{};
  options.precision = precision_;
  options.calibration = calibration_;  // (read-only: loads on the worker thread may share it)
  options.external_memory = 1;
  LoadResult r;
  r.stamp = stamp;
  if (denox_model_load_file(ctx_, path_.c_str(), &options, &r.model) != DENOX_SUCCESS)
    r.error = denox_last_error();  // per thread: read it on the thread that failed
  return r;
}

void Denoiser::configure(const Aovs& in, const Image& out) {
  in_ = &in;
  out_ = &out;
  apply(*slot_);
}

void Denoiser::apply(Slot& s) {
  if (!in_) return;  // configure() has not run yet; it will apply
  const uint32_t w = in_->width, h = in_->height;
  if (denox_model_input_count(s.model) != 1 || denox_model_output_count(s.model) != 1)
    throw std::runtime_error("the model must have one input and one output");
  dx(denox_model_set_extent(s.model, w, h), "denox_model_set_extent");
  denox_tensor_info in_info{}, out_info{};
  dx(denox_model_get_tensor_info(s.model, DENOX_INPUT, 0, &in_info), "denox_model_get_tensor_info");
  dx(denox_model_get_tensor_info(s.model, DENOX_OUTPUT, 0, &out_info), "denox_model_get_tensor_info");
  if (in_info.channels != 3 && in_info.channels != 6 && in_info.channels != 9)
    throw std::runtime_error("the model takes " + std::to_string(in_info.channels) +
                             " channels; the path tracer provides color (3), + albedo (6), + normal (9)");
  if (out_info.channels != 3 || out_info.width != w || out_info.height != h)
    throw std::runtime_error("the model's output is not 3 channels at the input's size");

  // The renderer's memory for denox: weights once, scratch grown when the extent needs more.
  denox_memory_requirements req{};
  dx(denox_model_memory_requirements(s.model, w, h, &req), "denox_model_memory_requirements");
  bool rebind = false;
  if (!s.weights) {
    s.weights = std::make_unique<Buffer>(dev_, req.weights_size, true, req.usage);
    rebind = true;
  }
  if (!s.scratch || s.scratch->size() < req.scratch_size) {
    s.scratch = std::make_unique<Buffer>(dev_, req.scratch_size, true, req.usage);
    rebind = true;
  }
  if (rebind)  // uploads the weights (at every bind, on the context's queue, waiting)
    dx(denox_model_bind_memory(s.model, s.scratch->handle(), 0, s.scratch->size(), s.weights->handle(), 0),
       "denox_model_bind_memory");

  // Color, albedo, normal fill channels 0-2, 3-5, 6-8: as many as the model takes.
  const Image* images[3] = {&in_->color, &in_->albedo, &in_->normal};
  denox_binding in[3] = {};
  for (uint32_t i = 0; i < in_info.channels / 3; ++i) {
    in[i].first_channel = 3 * i;
    in[i].channel_count = 3;
    in[i].image_view = images[i]->view();
    in[i].image_format = images[i]->format();
  }
  denox_binding o{};
  o.channel_count = 3;
  o.image_view = out_->view();
  o.image_format = out_->format();
  dx(denox_model_bind_input(s.model, 0, in, in_info.channels / 3), "denox_model_bind_input");
  dx(denox_model_bind_output(s.model, 0, &o, 1), "denox_model_bind_output");
}

bool Denoiser::poll(bool wait) {
  if (pending_.valid()) {
    if (!wait && pending_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return false;
    LoadResult r = pending_.get();
    auto slot = std::make_unique<Slot>();
    slot->model = r.model;
    try {
      if (!r.model) throw std::runtime_error(r.error);
      apply(*slot);
    } catch (const std::exception& e) {
      // A half-written or broken file: keep denoising with the old model until the file changes.
      std::fprintf(stderr, "model reload failed, keeping the previous model: %s\n", e.what());
      failed_ = r.stamp;
      return false;
    }
    slot_ = std::move(slot);  // the old model and its memory go: no frame is pending
    loaded_ = r.stamp;
    ++reloads_;
    std::printf("model reloaded from %s (%u input channels, %s)\n", path_.c_str(), input_channels(), precision_name());
    return true;
  }
  FileStamp now;
  if (!stamp_now(now) || now == loaded_ || now == failed_) return false;  // missing: an editor replacing it
  pending_ = std::async(std::launch::async, [this, now] { return load(now); });
  return wait ? poll(true) : false;
}

void Denoiser::record(VkCommandBuffer cmd) const {
  // The path tracer wrote the AOVs with compute-shader storage writes.
  denox_cmd_input_barrier(ctx_, cmd, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
  dx(denox_model_record(slot_->model, cmd), "denox_model_record");
}

void Denoiser::record_output_barrier(VkCommandBuffer cmd) const {
  // The tonemap pass reads the denoised image with compute-shader storage reads.
  denox_cmd_output_barrier(ctx_, cmd, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_READ_BIT);
}

uint32_t Denoiser::input_channels() const {
  denox_tensor_info info{};
  dx(denox_model_get_tensor_info(slot_->model, DENOX_INPUT, 0, &info), "denox_model_get_tensor_info");
  return info.channels;
}

const char* Denoiser::precision_name() const {
  if (denox_model_int8_dispatch_count(slot_->model) > 0) return "int8+fp16";
  return denox_model_precision(slot_->model) == DENOX_PRECISION_FP16 ? "fp16" : "fp32";
}

}  // namespace pathtracer

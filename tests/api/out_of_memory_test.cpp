// Host memory running out inside denox is DENOX_ERROR_OUT_OF_HOST_MEMORY with "out of host
// memory" in denox_last_error, not DENOX_ERROR_INTERNAL ("please report it"). Its own process:
// it caps its address space (RLIMIT_AS), which a process with a Vulkan driver loaded could not
// survive. Two ways to run out under the cap: importing a model with a 512 MiB initializer (the
// bad_alloc reaches the API's guard), and calibrating OIDN small on a sample whose fp32
// reference activations (32 channels at 2048x2048, 512 MiB each) do not fit (the reference
// names the op). Exit 0 on success, 1 naming the problem.
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "denox/denox.h"
#include "modelgen/oidn_unet.hpp"

namespace {

// The process's virtual size now (bytes), from /proc/self/statm (pages).
long long virtual_bytes() {
  std::ifstream statm("/proc/self/statm");
  long long pages = 0;
  statm >> pages;
  return pages * sysconf(_SC_PAGESIZE);
}

int failed(const std::string& what) {
  std::fprintf(stderr, "out_of_memory_test: %s\n", what.c_str());
  return 1;
}

// Calibrates and expects DENOX_ERROR_OUT_OF_HOST_MEMORY naming it; "" when so, else the problem.
std::string expect_out_of_memory(const char* what, const std::string& model, const denox_calibration_sample& sample) {
  denox_calibration calibration = nullptr;
  const denox_result r = denox_calibrate_memory(model.data(), model.size(), &sample, 1, &calibration);
  const std::string message = denox_last_error();
  if (calibration != nullptr) denox_calibration_destroy(calibration);
  if (r != DENOX_ERROR_OUT_OF_HOST_MEMORY)
    return std::string(what) + ": expected DENOX_ERROR_OUT_OF_HOST_MEMORY, got " + denox_result_name(r) + ": " + message;
  if (message.find("out of host memory") == std::string::npos) return std::string(what) + ": the message does not say so: " + message;
  std::printf("out_of_memory_test: %s: %s: %s\n", what, denox_result_name(r), message.c_str());
  return "";
}

}  // namespace

int main() {
  denox::modelgen::OidnUnetOptions options;
  options.size = denox::modelgen::OidnUnetOptions::Size::Small;
  onnx::ModelProto proto = denox::modelgen::build_oidn_unet(options);
  const std::string model = proto.SerializeAsString();
  // The same model with an unused 512 MiB initializer (denox decodes every initializer).
  onnx::TensorProto* big = proto.mutable_graph()->add_initializer();
  big->set_name("unused_512_mib");
  big->set_data_type(onnx::TensorProto::FLOAT);
  big->add_dims(int64_t{1} << 27);
  big->mutable_raw_data()->assign(size_t{4} << 27, '\x01');
  const std::string big_model = proto.SerializeAsString();
  proto.Clear();

  constexpr uint32_t kSide = 2048;  // a multiple of 16: the model has no padding
  std::vector<float> input(size_t{3} * kSide * kSide);
  for (size_t i = 0; i < input.size(); ++i) input[i] = 0.25f + 0.5f * static_cast<float>((i * 2654435761u) % 1000) / 1000.0f;
  const float* inputs[] = {input.data()};
  const denox_calibration_sample sample{kSide, kSide, inputs, 1};

  // Room for the import, the reference's threads and a few small tensors; not for one activation.
  const rlim_t cap = static_cast<rlim_t>(virtual_bytes() + (384ll << 20));
  const rlimit limit{cap, cap};
  if (setrlimit(RLIMIT_AS, &limit) != 0) return failed("setrlimit(RLIMIT_AS) failed");

  for (const auto& [what, bytes] : {std::pair{"import", &big_model}, std::pair{"reference", &model}}) {
    const std::string problem = expect_out_of_memory(what, *bytes, sample);
    if (!problem.empty()) return failed(problem);
  }
  return 0;
}

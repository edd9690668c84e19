// Host memory running out inside denox is DENOX_ERROR_OUT_OF_HOST_MEMORY with "out of host
// memory" in denox_last_error, not DENOX_ERROR_INTERNAL ("please report it"). Its own process:
// it caps its address space (RLIMIT_AS), which a process with a Vulkan driver loaded could not
// survive. Two ways to run out under the cap: importing a model whose 256 MiB initializer does
// not fit twice (protobuf's copy and the decoded one; the bad_alloc reaches the API's guard),
// and calibrating OIDN small on a sample whose fp32 reference activations (32 channels at
// 2048x2048, 512 MiB each) do not fit (the reference names the op). First, under a looser cap,
// a model with an unused 512 MiB initializer that would not fit decoded: it is not decoded, so
// it calibrates. Exit 0 on success, 1 naming the problem.
#include <malloc.h>
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
  // The same model with a big initializer, of `floats` elements, that a Shape node reads (so
  // it is decoded) or that nothing reads (so it is not).
  const auto with_initializer = [&](int64_t floats, bool read) {
    onnx::ModelProto copy = proto;
    onnx::TensorProto* big = copy.mutable_graph()->add_initializer();
    big->set_name("big");
    big->set_data_type(onnx::TensorProto::FLOAT);
    big->add_dims(floats);
    big->mutable_raw_data()->assign(static_cast<size_t>(floats) * 4, '\x01');
    if (read) {
      onnx::NodeProto* shape = copy.mutable_graph()->add_node();
      shape->set_name("shape_of_big");
      shape->set_op_type("Shape");
      shape->add_input("big");
      shape->add_output("big_shape");
    }
    return copy.SerializeAsString();
  };
  const std::string read_256_mib = with_initializer(int64_t{1} << 26, true);
  std::string unused_512_mib = with_initializer(int64_t{1} << 27, false);
  proto.Clear();

  constexpr uint32_t kSide = 2048;  // a multiple of 16: the model has no padding
  std::vector<float> input(size_t{3} * kSide * kSide);
  for (size_t i = 0; i < input.size(); ++i) input[i] = 0.25f + 0.5f * static_cast<float>((i * 2654435761u) % 1000) / 1000.0f;
  const float* inputs[] = {input.data()};
  const denox_calibration_sample sample{kSide, kSide, inputs, 1};

  // The reference's worker threads would each reserve a 64 MiB malloc arena of address space.
  mallopt(M_ARENA_MAX, 2);
  const auto cap_address_space = [](long long headroom) {
    const rlim_t cap = static_cast<rlim_t>(virtual_bytes() + headroom);
    const rlimit limit{cap, cap};
    return setrlimit(RLIMIT_AS, &limit) == 0;
  };

  // Room for protobuf's copy of the unused initializer and a small calibration, not for the
  // initializer decoded as well.
  if (!cap_address_space(768ll << 20)) return failed("setrlimit(RLIMIT_AS) failed");
  {
    std::vector<float> small(size_t{3} * 16 * 16, 0.5f);
    const float* small_inputs[] = {small.data()};
    const denox_calibration_sample small_sample{16, 16, small_inputs, 1};
    denox_calibration calibration = nullptr;
    const denox_result r = denox_calibrate_memory(unused_512_mib.data(), unused_512_mib.size(), &small_sample, 1, &calibration);
    if (r != DENOX_SUCCESS) return failed(std::string("an unused 512 MiB initializer: ") + denox_result_name(r) + ": " + denox_last_error());
    denox_calibration_destroy(calibration);
    std::string().swap(unused_512_mib);
  }

  // Room for the import, the reference's threads and a few small tensors; not for one activation.
  if (!cap_address_space(384ll << 20)) return failed("setrlimit(RLIMIT_AS) failed");

  for (const auto& [what, bytes] : {std::pair{"import", &read_256_mib}, std::pair{"reference", &model}}) {
    const std::string problem = expect_out_of_memory(what, *bytes, sample);
    if (!problem.empty()) return failed(problem);
  }
  return 0;
}

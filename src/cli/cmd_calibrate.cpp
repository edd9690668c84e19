// `denox calibrate MODEL -i SAMPLE... -o CALIBRATION.json`: the int8 calibration of a model
// (denox_calibrate_file) from sample inputs, written for `--precision int8 --calibration` and
// for shipping with an application (denox_calibration_load). Each sample is one file per model
// input (.npy NCHW float32 or .pfm), the samples one after another: a one-input model takes one
// file per sample.
#include <cstdio>

#include "cli/commands.hpp"
#include "cli/gpu_session.hpp"
#include "common/error.hpp"
#include "compiler/import/onnx_import.hpp"
#include "io/npy.hpp"  // write_file_atomically

namespace denox::cli {
namespace {

struct CalibrateOptions {
  std::string model, output;
  std::vector<std::string> inputs;
};

int calibrate(const CalibrateOptions& o) {
  // The graph's inputs, to group the files into samples and check their channel counts (the C
  // API takes raw arrays and trusts their size).
  const compiler::Graph graph = compiler::import_onnx_file(o.model);
  const size_t per_sample = graph.inputs.size();
  if (per_sample == 0 || o.inputs.size() % per_sample != 0)
    fail(ErrorCode::InvalidArgument, "the model has " + std::to_string(per_sample) + " input(s): give that many --input files per sample (" +
                                         std::to_string(o.inputs.size()) + " given)");
  std::vector<HostTensor> tensors;
  for (const auto& path : o.inputs) tensors.push_back(read_tensor(path));
  std::vector<std::vector<const float*>> arrays(o.inputs.size() / per_sample);
  std::vector<denox_calibration_sample> samples(arrays.size());
  for (size_t s = 0; s < samples.size(); ++s) {
    for (size_t i = 0; i < per_sample; ++i) {
      const size_t f = s * per_sample + i;
      const HostTensor& t = tensors[f];
      const compiler::Tensor& in = graph.tensor(graph.inputs[i]);
      const int64_t c = graph.program.is_constant(in.shape.at(1)) ? graph.program.constant_value(in.shape[1]) : -1;
      if (t.shape.size() != 4 || t.shape[0] != 1 || t.shape[1] != c)
        fail(ErrorCode::InvalidArgument, "'" + o.inputs[f] + "' is " + t.shape_string() + "; model input '" + in.name + "' takes 1x" +
                                             std::to_string(c) + "xHxW");
      if (i > 0 && (t.shape[2] != tensors[f - 1].shape[2] || t.shape[3] != tensors[f - 1].shape[3]))
        fail(ErrorCode::InvalidArgument, "'" + o.inputs[f] + "' has another extent than the other inputs of its sample");
      arrays[s].push_back(t.f32.data());
    }
    const HostTensor& first = tensors[s * per_sample];
    samples[s].width = static_cast<uint32_t>(first.shape[3]);
    samples[s].height = static_cast<uint32_t>(first.shape[2]);
    samples[s].inputs = arrays[s].data();
    samples[s].input_count = static_cast<uint32_t>(per_sample);
  }
  const Calibration c = Calibration::from_samples(o.model, samples);
  io::write_file_atomically(o.output, c.save());
  std::printf("calibrated %s on %zu sample(s) -> %s (model %s)\n", o.model.c_str(), samples.size(), o.output.c_str(),
              c.model_hash().substr(0, 16).c_str());
  return 0;
}

}  // namespace

Action register_calibrate(CLI::App& app) {
  auto* cmd = app.add_subcommand("calibrate", "Measure a model's tensor ranges on sample inputs for --precision int8 (CPU, no GPU)");
  auto o = std::make_shared<CalibrateOptions>();
  cmd->add_option("model", o->model, "ONNX model file")->required()->check(CLI::ExistingFile);
  cmd->add_option("-i,--input", o->inputs, "Sample input files (.npy or .pfm): one per model input per sample, samples in order")
      ->required();
  cmd->add_option("-o,--output", o->output, "The calibration file to write (JSON)")->required();
  return [o] { return calibrate(*o); };
}

}  // namespace denox::cli

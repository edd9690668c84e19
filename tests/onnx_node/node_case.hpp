// One ONNX backend node test (a directory with model.onnx and test_data_set_N/{input,output}_K.pb)
// run through denox's importer and CPU reference executor, with the result compared to ONNX's
// expected outputs.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace denox::node_tests {

// How the test's model is fed to denox.
//  AsIs:   unchanged; every graph input is a runtime input.
//  Frozen: graph inputs 1.. become initializers holding the data set's values. Node tests pass
//          parameters (Slice starts, Pad pads, Resize scales, Reshape shape) as runtime inputs,
//          which denox rejects by design (they must be static); freezing them tests the op's
//          semantics as a real model (where they are constants or shape arithmetic) uses it.
//  Static: every graph input becomes an initializer and an unused float input is added, so the
//          whole node is evaluated by the importer's static evaluator (the shape-program
//          arithmetic behind Gather, Equal, Where, Cast, ...) and its outputs become constants.
//  Dynamic: Frozen, and every extent of the remaining input is a symbol (dim_param), so the
//          output shape, pads and offsets are computed by the shape program at run time.
enum class Variant { AsIs, Frozen, Static, Dynamic };
const char* variant_suffix(Variant v);  // "", "+frozen", "+static", "+dynamic"

enum class OutcomeKind {
  Pass,         // every data set matched
  Mismatch,     // ran, but an output differs (shape, type or values)
  Unsupported,  // denox::Error with ErrorCode::Unsupported
  OtherError,   // any other denox::Error
  Crash,        // an exception that is not a denox::Error (a bug by definition)
};
const char* outcome_name(OutcomeKind k);

struct Outcome {
  OutcomeKind kind = OutcomeKind::Pass;
  ErrorCode code = ErrorCode::Internal;  // Unsupported / OtherError
  std::string message;                   // the error, or what differed
};

// The node labels the importer uses for the model's nodes ("node 'n' (Conv, opset 17)"), one
// per node, and the op types in the model (for grouping tests by family).
struct ModelSummary {
  std::vector<std::string> op_types;  // in node order, duplicates kept
  std::vector<std::string> node_names;
  int64_t opset = 0;
  std::vector<std::string> input_types;  // element type name per graph input
};
ModelSummary summarize_model(const std::filesystem::path& test_dir);

// Runs every data set of the test in `test_dir` in the given variant. Never throws for anything
// the test does (errors become outcomes); throws std::runtime_error for a broken test directory.
Outcome run_node_test(const std::filesystem::path& test_dir, Variant variant);

// Whether `message` names one of the model's nodes the way the importer does: node name (or,
// for an unnamed node, its first output), op type and opset.
bool names_a_node(const std::string& message, const ModelSummary& model);

}  // namespace denox::node_tests

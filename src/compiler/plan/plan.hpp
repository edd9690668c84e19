// The plan: what the compiler hands the runtime, and what the cache stores and a game ships.
// A linear list of dispatches over a small set of pipelines. Every size-dependent number in it
// (buffer sizes, push constants, dispatch sizes) is a ValueId into the plan's shape program, so
// one plan serves every resolution: the runtime evaluates the program once per set_extent.
//
// Nothing here assumes one dispatch per op: a dispatch names the ops it implements (for tables
// and errors) and binds whatever tensors its shader reads and writes.
//
// Serialized with flatbuffers (schema: plan.fbs, see plan_serialize.hpp); loading a plan needs
// neither ONNX nor glslang because every pipeline carries its SPIR-V.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "compiler/shape_program/shape_program.hpp"

namespace denox::plan {

using compiler::ValueId;

// Element type of denox's own tensors (scratch). Weights are stored in the same type.
enum class Precision : uint8_t { F32 = 0, F16 = 1 };
const char* precision_name(Precision p);
// Bytes per element of a scratch tensor or weight of this precision.
constexpr uint32_t element_size(Precision p) { return p == Precision::F16 ? 2u : 4u; }

enum class Access : uint8_t { Read = 0, Write = 1, ReadWrite = 2 };

// What a binding points at.
enum class Resource : uint8_t {
  Scratch = 0,  // a scratch tensor (index into Plan::scratch); placed by the runtime's allocator
  Weights = 1,  // a range of the weight blob (index into Plan::weights)
};

struct Binding {
  Resource resource = Resource::Scratch;
  uint32_t index = 0;
  Access access = Access::Read;
};

// A compute pipeline: one shader family (shaders/<family>.comp) compiled with a macro set.
struct Pipeline {
  std::string family;                                        // e.g. "conv2d"
  std::vector<std::pair<std::string, std::string>> defines;  // -D name=value, sorted by name
  std::vector<uint32_t> spirv;                               // filled by the shader compiler
  uint32_t binding_count = 0;         // storage-buffer bindings 0..n-1, in Dispatch::bindings order
  uint32_t push_constant_count = 0;   // 32-bit words
  std::array<uint32_t, 3> local_size{1, 1, 1};
};

// "family NAME=value ...": what identifies a pipeline (PlanBuilder deduplicates by it; logs).
std::string pipeline_key(const Pipeline& p);

struct Dispatch {
  std::string name;  // the op names it implements, "a+b" for fused ops (bench tables, errors)
  uint32_t pipeline = 0;
  std::vector<Binding> bindings;        // binding i of the pipeline's set 0
  std::vector<ValueId> push_constants;  // one 32-bit word each (values must fit int32/uint32)
  std::array<ValueId, 3> groups{};      // workgroup counts
};

// A tensor in scratch memory. Its byte offset is chosen by the runtime at set_extent from the
// sizes and the dispatches that touch it (tensors whose lifetimes do not overlap share memory).
struct ScratchTensor {
  std::string name;
  ValueId size_bytes = 0;
};

// A constant tensor already in the layout and type its shader reads.
struct WeightRange {
  std::string name;
  uint64_t offset = 0;  // into Plan::weight_data, 256-byte aligned
  uint64_t size = 0;
};

// A network input or output: a scratch tensor in denox's internal layout (NCHW, `precision`).
// The runtime moves data between it and the caller's buffers or images with adapter dispatches.
struct IoTensor {
  std::string name;
  std::array<ValueId, 4> shape{};  // N, C, H, W
  uint32_t scratch = 0;
};

struct Plan {
  static constexpr uint32_t kFormatVersion = 1;
  Precision precision = Precision::F32;
  std::string model_name;
  compiler::ShapeProgram program;
  std::vector<IoTensor> inputs, outputs;
  std::vector<Pipeline> pipelines;
  std::vector<ScratchTensor> scratch;
  std::vector<WeightRange> weights;
  std::vector<uint8_t> weight_data;
  std::vector<Dispatch> dispatches;
};

}  // namespace denox::plan

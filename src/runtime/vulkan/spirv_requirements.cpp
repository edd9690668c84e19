#include "runtime/vulkan/spirv_requirements.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "common/error.hpp"

namespace denox::runtime {

namespace {

// The SPIR-V numbers read here (SPIR-V 1.6 and SPV_KHR_cooperative_matrix; fixed by the spec).
// Spelled out rather than taken from a SPIR-V header: glslang's spirv.hpp is being replaced by
// spirv.hpp11 (other names), and Debian 12's SPIRV-Headers predate cooperative matrices.
namespace op {
constexpr uint32_t TypeVoid = 19, TypeBool = 20, TypeInt = 21, TypeFloat = 22, TypeVector = 23, TypeMatrix = 24, TypeArray = 28,
                   TypeRuntimeArray = 29, TypeStruct = 30, TypePointer = 32, Constant = 43, SpecConstant = 50, Variable = 59,
                   TypeCooperativeMatrixKHR = 4456, EntryPoint = 15, ExecutionMode = 16, ExecutionModeId = 331, Decorate = 71,
                   MemberDecorate = 72, Capability = 17;
}  // namespace op
constexpr uint32_t kExecutionModelGLCompute = 5;
constexpr uint32_t kModeLocalSize = 17, kModeLocalSizeId = 38;
constexpr uint32_t kDecorationBinding = 33, kDecorationDescriptorSet = 34, kDecorationOffset = 35, kDecorationArrayStride = 6;
constexpr uint32_t kStorageWorkgroup = 4, kStoragePushConstant = 9;
constexpr uint32_t kScopeSubgroup = 3;
constexpr uint32_t kUseA = 0, kUseB = 1, kUseAccumulator = 2;
constexpr uint32_t kMagic = 0x07230203;
constexpr size_t kHeaderWords = 5;
// Sizes saturate here: a module declaring more than this is refused by any device anyway, and
// the sums below cannot overflow.
constexpr uint64_t kHuge = uint64_t{1} << 40;

struct Type {
  uint32_t op = 0;
  std::vector<uint32_t> operands;  // the instruction's words after its result id
  size_t order = 0;                // declaration order: a type may refer only to earlier ones
};

class Reader {
 public:
  Reader(std::span<const uint32_t> words, const std::string& who) : words_(words), who_(who) {}

  SpirvRequirements read() {
    if (words_.size() < kHeaderWords || words_[0] != kMagic) bad(0, "not a SPIR-V module (no header)");
    bound_ = words_[3];
    std::vector<uint32_t> workgroup_variables, push_constant_variables;  // their pointer types
    for (size_t at = kHeaderWords; at < words_.size();) {
      const uint32_t count = words_[at] >> 16, opcode = words_[at] & 0xffffu;
      if (count == 0 || at + count > words_.size()) bad(at, "an instruction runs past the end of the module");
      const std::span<const uint32_t> ins = words_.subspan(at, count);
      switch (opcode) {
        case op::TypeVoid: case op::TypeBool: case op::TypeInt: case op::TypeFloat: case op::TypeVector:
        case op::TypeMatrix: case op::TypeArray: case op::TypeRuntimeArray: case op::TypeStruct:
        case op::TypePointer: case op::TypeCooperativeMatrixKHR:
          if (count < 2) bad(at, "a type without a result id");
          types_[id(ins[1], at)] = Type{opcode, std::vector<uint32_t>(ins.begin() + 2, ins.end()), types_.size() + 1};
          if (opcode == op::TypeCooperativeMatrixKHR) coop_types_.push_back(ins[1]);
          break;
        case op::Constant: case op::SpecConstant:  // (a spec constant counts at its default)
          if (count < 4) bad(at, "a constant without a value");
          constants_[id(ins[2], at)] = count == 4 ? ins[3] : (uint64_t{ins[4]} << 32 | ins[3]);
          break;
        case op::Variable:
          if (count < 4) bad(at, "a variable without a storage class");
          if (ins[3] == kStorageWorkgroup) workgroup_variables.push_back(id(ins[1], at));
          if (ins[3] == kStoragePushConstant) push_constant_variables.push_back(id(ins[1], at));
          break;
        case op::Capability:
          if (count < 2) bad(at, "a capability without a number");
          interface_.capabilities.push_back(ins[1]);
          break;
        case op::EntryPoint:
          if (count < 4) bad(at, "an entry point without a name");
          ++interface_.entry_points;
          if (ins[1] == kExecutionModelGLCompute) ++interface_.compute_entry_points;
          break;
        case op::ExecutionMode:
          if (count < 3) bad(at, "an execution mode without a mode");
          if (ins[2] == kModeLocalSize) {
            if (count < 6) bad(at, "a LocalSize without three sizes");
            interface_.local_size = std::array<uint32_t, 3>{ins[3], ins[4], ins[5]};
          }
          break;
        case op::ExecutionModeId:
          if (count >= 3 && ins[2] == kModeLocalSizeId) interface_.local_size_by_id = true;
          break;
        case op::Decorate:
          if (count < 3) bad(at, "a decoration without a target");
          if (count >= 4 && ins[2] == kDecorationBinding) bindings_[id(ins[1], at)] = ins[3];
          if (count >= 4 && ins[2] == kDecorationDescriptorSet) sets_[id(ins[1], at)] = ins[3];
          if (count >= 4 && ins[2] == kDecorationArrayStride) strides_[id(ins[1], at)] = ins[3];
          break;
        case op::MemberDecorate:
          if (count < 4) bad(at, "a member decoration without a member");
          if (count >= 5 && ins[3] == kDecorationOffset) offsets_[{id(ins[1], at), ins[2]}] = ins[4];
          break;
        default:
          break;
      }
      at += count;
    }
    SpirvRequirements r = interface_;
    // (A binding without a set is in set 0, as glslang writes it; a set without a binding has
    // binding 0.)
    for (const auto& [target, binding] : bindings_) r.descriptors.emplace_back(sets_.count(target) ? sets_.at(target) : 0, binding);
    for (const auto& [target, set] : sets_)
      if (!bindings_.count(target)) r.descriptors.emplace_back(set, 0);
    std::sort(r.descriptors.begin(), r.descriptors.end());
    for (uint32_t pointer : workgroup_variables) {
      const Type& p = type(pointer);
      if (p.op != op::TypePointer || p.operands.size() < 2) bad_id(pointer, "a Workgroup variable whose type is not a pointer");
      r.workgroup_bytes = std::min(kHuge, r.workgroup_bytes + size_of(p.operands[1], p.order, 0));
    }
    std::sort(r.capabilities.begin(), r.capabilities.end());
    r.capabilities.erase(std::unique(r.capabilities.begin(), r.capabilities.end()), r.capabilities.end());
    for (uint32_t pointer : push_constant_variables) {
      const Type& p = type(pointer);
      if (p.op != op::TypePointer || p.operands.size() < 2) bad_id(pointer, "a push-constant variable whose type is not a pointer");
      r.push_constant_bytes = std::max(r.push_constant_bytes, block_extent(p.operands[1], p.order));
    }
    std::set<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t, int>> seen;
    for (uint32_t t : coop_types_) {
      const Type& m = type(t);
      if (m.operands.size() < 5) bad_id(t, "a cooperative-matrix type with too few operands");
      const SpirvCoopMatrix c{constant32(m.operands[2]), constant32(m.operands[3]), constant32(m.operands[4]), constant32(m.operands[1]),
                              component(m.operands[0])};
      if (seen.emplace(c.rows, c.cols, c.use, c.scope, static_cast<int>(c.component)).second) r.coop_matrices.push_back(c);
    }
    return r;
  }

 private:
  [[noreturn]] void bad(size_t word, const std::string& what) const {
    fail(ErrorCode::InvalidModel, who_ + ": malformed SPIR-V at word " + std::to_string(word) + ": " + what);
  }
  [[noreturn]] void bad_id(uint32_t id, const std::string& what) const {
    fail(ErrorCode::InvalidModel, who_ + ": malformed SPIR-V: " + what + " (id " + std::to_string(id) + ")");
  }
  uint32_t id(uint32_t v, size_t at) const {
    if (v == 0 || v >= bound_) bad(at, "id " + std::to_string(v) + " outside the module's bound " + std::to_string(bound_));
    return v;
  }
  const Type& type(uint32_t id) const {
    const auto it = types_.find(id);
    if (it == types_.end()) bad_id(id, "a use of an undefined type");
    return it->second;
  }
  uint64_t constant(uint32_t id) const {
    const auto it = constants_.find(id);
    if (it == constants_.end()) bad_id(id, "a size, scope or use that is not a constant");
    return it->second;
  }
  uint32_t constant32(uint32_t id) const {
    const uint64_t v = constant(id);
    if (v > UINT32_MAX) bad_id(id, "a cooperative-matrix size, scope or use of more than 32 bits");
    return static_cast<uint32_t>(v);
  }
  VkComponentTypeKHR component(uint32_t id) const {
    const Type& t = type(id);
    const uint32_t width = t.operands.empty() ? 0 : t.operands[0];
    if (t.op == op::TypeFloat && t.operands.size() == 1) {  // (an encoding operand: bfloat16, fp8)
      if (width == 16) return VK_COMPONENT_TYPE_FLOAT16_KHR;
      if (width == 32) return VK_COMPONENT_TYPE_FLOAT32_KHR;
      if (width == 64) return VK_COMPONENT_TYPE_FLOAT64_KHR;
    }
    if (t.op == op::TypeInt && t.operands.size() == 2) {
      const bool sign = t.operands[1] != 0;
      if (width == 8) return sign ? VK_COMPONENT_TYPE_SINT8_KHR : VK_COMPONENT_TYPE_UINT8_KHR;
      if (width == 16) return sign ? VK_COMPONENT_TYPE_SINT16_KHR : VK_COMPONENT_TYPE_UINT16_KHR;
      if (width == 32) return sign ? VK_COMPONENT_TYPE_SINT32_KHR : VK_COMPONENT_TYPE_UINT32_KHR;
      if (width == 64) return sign ? VK_COMPONENT_TYPE_SINT64_KHR : VK_COMPONENT_TYPE_UINT64_KHR;
    }
    return VK_COMPONENT_TYPE_MAX_ENUM_KHR;  // (matches no device shape: refused by name)
  }
  // The bytes a push-constant block reaches: the end of its furthest member (its Offset plus
  // its size; an array's size by its ArrayStride where it has one).
  uint64_t block_extent(uint32_t id, size_t user) const {
    const Type& t = type(id);
    if (t.order >= user) bad_id(id, "a type used before its declaration");
    if (t.op != op::TypeStruct) return size_of(id, user, 0);
    uint64_t end = 0;
    for (uint32_t m = 0; m < t.operands.size(); ++m) {
      const auto offset = offsets_.find({id, m});
      const uint64_t at = offset == offsets_.end() ? 0 : offset->second;
      end = std::max(end, std::min(kHuge, at + size_of(t.operands[m], t.order, 1)));
    }
    return end;
  }

  // Bytes of a type in Workgroup storage, declared before the type of order `user` (so a damaged
  // module cannot loop), memoized (so shared subtypes cost once), at most 64 types deep.
  uint64_t size_of(uint32_t id, size_t user, int depth) const {
    if (depth > 64) bad_id(id, "types nested more than 64 deep");
    const Type& t = type(id);
    if (t.order >= user) bad_id(id, "a type used before its declaration");
    if (const auto known = sizes_.find(id); known != sizes_.end()) return known->second;
    const auto& o = t.operands;
    auto need = [&](size_t n) {
      if (o.size() < n) bad_id(id, "a type with too few operands");
    };
    auto times = [](uint64_t a, uint64_t b) { return b != 0 && a > kHuge / b ? kHuge : std::min(kHuge, a * b); };
    uint64_t size = 0;
    switch (t.op) {
      case op::TypeBool:
        size = 4;
        break;
      case op::TypeInt:
      case op::TypeFloat:
        need(1);
        size = std::max<uint64_t>(1, o[0] / 8);
        break;
      case op::TypeVector:
      case op::TypeMatrix:
        need(2);
        size = times(size_of(o[0], t.order, depth + 1), o[1]);
        break;
      case op::TypeArray: {
        need(2);
        // (Workgroup arrays carry no stride; a push-constant block's do, and may pad.)
        const auto stride = strides_.find(id);
        size = times(stride != strides_.end() ? stride->second : size_of(o[0], t.order, depth + 1), constant(o[1]));
        break;
      }
      case op::TypeStruct:
        for (uint32_t member : o) size = std::min(kHuge, size + size_of(member, t.order, depth + 1));
        break;
      default:
        bad_id(id, "a Workgroup or push-constant variable of a type without a size");
    }
    sizes_[id] = size;
    return size;
  }

  std::span<const uint32_t> words_;
  const std::string& who_;
  uint32_t bound_ = 0;
  std::unordered_map<uint32_t, Type> types_;
  std::unordered_map<uint32_t, uint64_t> constants_;
  mutable std::unordered_map<uint32_t, uint64_t> sizes_;
  std::vector<uint32_t> coop_types_;
  SpirvRequirements interface_;                        // entry points, local size
  std::unordered_map<uint32_t, uint32_t> bindings_, sets_;  // decorated id -> Binding, DescriptorSet
  std::unordered_map<uint32_t, uint32_t> strides_;          // array type -> ArrayStride
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> offsets_;  // (struct type, member) -> Offset
};

const char* component_name(VkComponentTypeKHR c) {
  switch (c) {
    case VK_COMPONENT_TYPE_FLOAT16_KHR: return "fp16";
    case VK_COMPONENT_TYPE_FLOAT32_KHR: return "fp32";
    case VK_COMPONENT_TYPE_FLOAT64_KHR: return "fp64";
    case VK_COMPONENT_TYPE_SINT8_KHR: return "int8";
    case VK_COMPONENT_TYPE_UINT8_KHR: return "uint8";
    case VK_COMPONENT_TYPE_SINT16_KHR: return "int16";
    case VK_COMPONENT_TYPE_UINT16_KHR: return "uint16";
    case VK_COMPONENT_TYPE_SINT32_KHR: return "int32";
    case VK_COMPONENT_TYPE_UINT32_KHR: return "uint32";
    case VK_COMPONENT_TYPE_SINT64_KHR: return "int64";
    case VK_COMPONENT_TYPE_UINT64_KHR: return "uint64";
    default: return "unknown-type";
  }
}

// Whether one of the device's subgroup shapes has a matrix of this size and type as its A (M x K),
// B (K x N), C or result (M x N). The use is not compared: a shader may keep a matrix of any use
// whose type matches one of those (VUID-RuntimeSpirv-OpTypeCooperativeMatrixKHR-08974); denox's
// shaders store fp32 accumulators through fp16 ones, which a device with fp32 C and fp16 B allows.
bool reported(const SpirvCoopMatrix& m, const std::vector<CoopMatrixShape>& shapes) {
  if (m.scope != kScopeSubgroup) return false;
  return std::any_of(shapes.begin(), shapes.end(), [&](const CoopMatrixShape& s) {
    return (s.m == m.rows && s.k == m.cols && s.a_type == m.component) || (s.k == m.rows && s.n == m.cols && s.b_type == m.component) ||
           (s.m == m.rows && s.n == m.cols && (s.c_type == m.component || s.result_type == m.component));
  });
}

// SPIR-V capabilities and the enabled feature each needs: those denox's shaders declare (with the
// glslang setup-deps builds), and those another glslang might add, whose features denox never
// enables. A module declaring a capability whose feature is off would make pipeline creation
// undefined behaviour.
enum class Needs { Nothing, ShaderFloat16, StorageBuffer16Bit, ShaderInt8, CooperativeMatrix, VulkanMemoryModel, NeverEnabled };
struct KnownCapability {
  uint32_t number;
  const char* name;
  Needs needs;
  const char* never_enabled_feature = nullptr;  // Needs::NeverEnabled: the feature's name
};
constexpr KnownCapability kKnownCapabilities[] = {
    {1, "Shader", Needs::Nothing},
    {9, "Float16", Needs::ShaderFloat16},
    {39, "Int8", Needs::ShaderInt8},
    {61, "GroupNonUniform", Needs::Nothing},  // (every Vulkan 1.1 device has basic subgroup operations in compute)
    {4433, "StorageBuffer16BitAccess", Needs::StorageBuffer16Bit},
    {5345, "VulkanMemoryModel", Needs::VulkanMemoryModel},
    {6022, "CooperativeMatrixKHR", Needs::CooperativeMatrix},
    {10, "Float64", Needs::NeverEnabled, "VkPhysicalDeviceFeatures::shaderFloat64"},
    {11, "Int64", Needs::NeverEnabled, "VkPhysicalDeviceFeatures::shaderInt64"},
    {22, "Int16", Needs::NeverEnabled, "VkPhysicalDeviceFeatures::shaderInt16"},
    {4448, "StorageBuffer8BitAccess", Needs::NeverEnabled, "VkPhysicalDeviceVulkan12Features::storageBuffer8BitAccess"},
    {5346, "VulkanMemoryModelDeviceScope", Needs::VulkanMemoryModel},
};

const KnownCapability* known_capability(uint32_t number) {
  for (const auto& c : kKnownCapabilities)
    if (c.number == number) return &c;
  return nullptr;
}

// "" where `caps` enabled what `c` needs, else the feature's name.
std::string missing_feature(const KnownCapability& c, const DeviceCapabilities& caps) {
  switch (c.needs) {
    case Needs::Nothing: return "";
    case Needs::ShaderFloat16: return caps.shader_float16 ? "" : "VkPhysicalDeviceVulkan12Features::shaderFloat16";
    case Needs::StorageBuffer16Bit: return caps.storage_buffer_16bit ? "" : "VkPhysicalDeviceVulkan11Features::storageBuffer16BitAccess";
    case Needs::ShaderInt8: return caps.shader_int8 ? "" : "VkPhysicalDeviceVulkan12Features::shaderInt8";
    case Needs::CooperativeMatrix: return caps.cooperative_matrix ? "" : "VK_KHR_cooperative_matrix (cooperativeMatrix)";
    case Needs::VulkanMemoryModel: return caps.vulkan_memory_model ? "" : "VkPhysicalDeviceVulkan12Features::vulkanMemoryModel";
    case Needs::NeverEnabled: return c.never_enabled_feature;
  }
  return "";
}

}  // namespace

SpirvRequirements read_spirv_requirements(std::span<const uint32_t> spirv, const std::string& who) {
  return Reader(spirv, who).read();
}

std::string describe(const SpirvCoopMatrix& m) {
  const char* use = m.use == kUseA ? "A" : m.use == kUseB ? "B" : m.use == kUseAccumulator ? "accumulator" : "unknown use";
  std::string s = std::to_string(m.rows) + "x" + std::to_string(m.cols) + " " + component_name(m.component) + " (" + use + ")";
  if (m.scope != kScopeSubgroup) s += " at scope " + std::to_string(m.scope) + ", not subgroup";
  return s;
}

std::string spirv_interface_mismatch(const SpirvRequirements& r, const std::array<uint32_t, 3>& local_size, uint32_t binding_count,
                                     uint32_t push_constant_bytes) {
  const auto sizes = [](const std::array<uint32_t, 3>& s) {
    return std::to_string(s[0]) + "x" + std::to_string(s[1]) + "x" + std::to_string(s[2]);
  };
  if (r.entry_points != 1 || r.compute_entry_points != 1)
    return "has " + std::to_string(r.entry_points) + " entry points (" + std::to_string(r.compute_entry_points) +
           " of them compute); a pipeline's module has one compute entry point";
  if (r.local_size_by_id) return "sets its workgroup size through specialization constants (LocalSizeId), which no denox shader does";
  if (!r.local_size) return "declares no workgroup size";
  if (*r.local_size != local_size)
    return "declares workgroups of " + sizes(*r.local_size) + " invocations, its pipeline " + sizes(local_size);
  for (const auto& [set, binding] : r.descriptors)
    if (set != 0 || binding >= binding_count)
      return "uses descriptor set " + std::to_string(set) + " binding " + std::to_string(binding) + "; its pipeline has bindings 0 to " +
             std::to_string(static_cast<int64_t>(binding_count) - 1) + " of set 0";
  if (r.push_constant_bytes > push_constant_bytes)
    return "reads " + std::to_string(r.push_constant_bytes) + " bytes of push constants; its pipeline's range has " +
           std::to_string(push_constant_bytes);
  return "";
}

std::string unmet_spirv_requirement(const SpirvRequirements& r, const DeviceCapabilities& caps, bool unknown_capabilities_unmet) {
  if (r.workgroup_bytes > caps.max_compute_shared_memory)
    return "declares " + std::to_string(r.workgroup_bytes) + " bytes of shared memory, more than the " +
           std::to_string(caps.max_compute_shared_memory) + " a workgroup may have (maxComputeSharedMemorySize)";
  if (!r.coop_matrices.empty() && !caps.cooperative_matrix)
    return "uses cooperative matrices (" + describe(r.coop_matrices.front()) + "), but VK_KHR_cooperative_matrix is not enabled";
  for (const SpirvCoopMatrix& m : r.coop_matrices)
    if (!reported(m, caps.coop_matrix_shapes))
      return "uses " + describe(m) + " cooperative matrices, a shape the device does not report (vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)";
  for (uint32_t number : r.capabilities) {
    const KnownCapability* c = known_capability(number);
    if (c == nullptr && unknown_capabilities_unmet)
      return "declares SPIR-V capability " + std::to_string(number) + ", which denox cannot check against the device (no denox shader declares it)";
    if (c == nullptr) continue;
    if (const std::string feature = missing_feature(*c, caps); !feature.empty())
      return "declares SPIR-V capability " + std::string(c->name) + ", but " + feature + " is not enabled" +
             (c->needs == Needs::NeverEnabled ? " (denox never enables it)" : "");
  }
  return "";
}

}  // namespace denox::runtime

// `denox info [--device N]`: the Vulkan device denox would use, what it supports, and what
// denox needs from a device an engine creates.
#include <cstdio>
#include <cstring>

#include "cli/commands.hpp"
#include "cli/print_json.hpp"
#include "cli/gpu_session.hpp"

namespace denox::cli {
namespace {

struct InfoOptions {
  GpuOptions gpu;
  bool json = false;
};

const char* component_name(VkComponentTypeKHR t) {
  switch (t) {
    case VK_COMPONENT_TYPE_FLOAT16_KHR: return "f16";
    case VK_COMPONENT_TYPE_FLOAT32_KHR: return "f32";
    case VK_COMPONENT_TYPE_SINT8_KHR: return "s8";
    case VK_COMPONENT_TYPE_UINT8_KHR: return "u8";
    case VK_COMPONENT_TYPE_SINT32_KHR: return "s32";
    default: return "other";
  }
}

// Every physical device of the instance, and the cooperative-matrix shapes of the chosen one
// (through the engine-side entry points: these are facts about the device, not denox's API).
void print_devices(const denox_context_info& i) {
  auto host = vkhost::Device::wrap(i);
  uint32_t n = 0;
  vkEnumeratePhysicalDevices(i.instance, &n, nullptr);
  std::vector<VkPhysicalDevice> pds(n);
  vkEnumeratePhysicalDevices(i.instance, &n, pds.data());
  std::printf("\nDevices (--device N):\n");
  for (uint32_t k = 0; k < n; ++k) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(pds[k], &p);
    std::printf("  %c %u: %s, Vulkan %u.%u.%u\n", pds[k] == i.physical_device ? '*' : ' ', k, p.deviceName,
                VK_API_VERSION_MAJOR(p.apiVersion), VK_API_VERSION_MINOR(p.apiVersion), VK_API_VERSION_PATCH(p.apiVersion));
  }
  uint32_t en = 0;
  vkEnumerateDeviceExtensionProperties(i.physical_device, nullptr, &en, nullptr);
  std::vector<VkExtensionProperties> exts(en);
  vkEnumerateDeviceExtensionProperties(i.physical_device, nullptr, &en, exts.data());
  bool coop = false;
  for (const auto& e : exts) coop |= std::strcmp(e.extensionName, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME) == 0;
  if (!coop || vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR == nullptr) {
    std::printf("\nCooperative matrices: not supported by this device\n");
    return;
  }
  uint32_t cn = 0;
  vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR(i.physical_device, &cn, nullptr);
  std::vector<VkCooperativeMatrixPropertiesKHR> shapes(cn, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR});
  vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR(i.physical_device, &cn, shapes.data());
  std::printf("\nCooperative-matrix shapes (M x N x K, A/B -> C/result, subgroup scope):\n");
  for (const auto& s : shapes) {
    if (s.scope != VK_SCOPE_SUBGROUP_KHR) continue;
    std::printf("  %2ux%2ux%2u  %s/%s -> %s/%s\n", s.MSize, s.NSize, s.KSize, component_name(s.AType), component_name(s.BType),
                component_name(s.CType), component_name(s.ResultType));
  }
}

int info(const InfoOptions& o) {
  const denox_context_options co = context_options(o.gpu);
  const Context ctx = Context::headless(o.gpu.device, o.gpu.validation, &co);
  const auto i = ctx.info();
  if (o.json) {
    const nlohmann::ordered_json j = {{"device", i.device_name},
                                      {"vendor_id", i.vendor_id},
                                      {"device_id", i.device_id},
                                      {"api_version", std::to_string(VK_API_VERSION_MAJOR(i.api_version)) + "." +
                                                      std::to_string(VK_API_VERSION_MINOR(i.api_version)) + "." +
                                                      std::to_string(VK_API_VERSION_PATCH(i.api_version))},
                                      {"fp16", bool(i.fp16_supported)},
                                      {"cooperative_matrix", bool(i.cooperative_matrix)},
                                      {"int8", bool(i.int8_supported)},
                                      {"timestamps", bool(i.timestamps_supported)},
                                      {"cache", i.cache_enabled ? i.cache_path : ""},
                                      {"shipped_cache", i.shipped_cache_path}};
    print_json(j);
    fail_on_validation_errors(ctx.stats());
    return 0;
  }
  std::printf("denox %s\n", denox_version_string());
  std::printf("device              %s (vendor 0x%04x, device 0x%04x)\n", i.device_name, i.vendor_id, i.device_id);
  std::printf("Vulkan              %u.%u.%u\n", VK_API_VERSION_MAJOR(i.api_version), VK_API_VERSION_MINOR(i.api_version),
              VK_API_VERSION_PATCH(i.api_version));
  std::printf("fp16 storage        %s\n", i.fp16_supported ? "yes" : "no");
  std::printf("cooperative matrix  %s\n", i.cooperative_matrix ? "yes" : "no");
  std::printf("int8 precision      %s\n", i.int8_supported ? "yes (--precision int8 with --calibration)" : "no");
  std::printf("timestamps          %s (%.2f ns per tick)\n", i.timestamps_supported ? "yes" : "no", i.timestamp_period_ns);
  std::printf("cache               %s\n", i.cache_enabled ? i.cache_path : "off");
  if (i.shipped_cache_path[0] != 0) std::printf("shipped cache       %s (read-only)\n", i.shipped_cache_path);
  uint32_t n = 0;
  const denox_device_requirement* reqs = denox_device_requirements(&n);
  std::printf("\nWhat an engine enables at device creation for denox:\n");
  for (uint32_t k = 0; k < n; ++k) std::printf("  %-9s %-56s %s\n", reqs[k].required ? "required" : "optional", reqs[k].name, reqs[k].why);
  print_devices(i);
  fail_on_validation_errors(ctx.stats());
  return 0;
}

}  // namespace

Action register_info(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Show the Vulkan device denox would use and what denox needs");
  auto o = std::make_shared<InfoOptions>();
  add_gpu_options(cmd, o->gpu);
  cmd->add_flag("--json", o->json, "Print one JSON object");
  return [o] { return info(*o); };
}

}  // namespace denox::cli

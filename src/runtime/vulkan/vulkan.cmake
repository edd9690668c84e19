# The Vulkan runtime: device context, pipelines, memory, set_extent/record (see README.md here).
# Included from src/CMakeLists.txt, so CMAKE_CURRENT_SOURCE_DIR is src/.
find_package(VulkanHeaders CONFIG REQUIRED)
find_path(DENOX_VOLK_DIR volk.c REQUIRED)

# volk's loader code is compiled into denox; its symbols stay inside the shared library (only
# the C API is exported), so an engine that uses volk itself does not clash with ours.
add_library(denox_volk STATIC ${DENOX_VOLK_DIR}/volk.c)
target_include_directories(denox_volk PUBLIC ${DENOX_VOLK_DIR})
target_link_libraries(denox_volk PUBLIC Vulkan::Headers ${CMAKE_DL_LIBS})

add_library(denox_vulkan STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/vulkan/vk_check.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/vulkan/device_context.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/vulkan/buffer.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/vulkan/compute_pipeline.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/vulkan/coop_layout_check.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/vulkan/schedule.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/vulkan/io_adapters.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/vulkan/executable_model.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/vulkan/record.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/vulkan/spirv_requirements.cpp
)
target_include_directories(denox_vulkan PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(denox_vulkan PUBLIC denox_volk denox_plan denox_reference)

# The engine-side Vulkan helper of denox's own tools, tests and benchmarks (vk_host.hpp). It
# links libdenox like an engine would and brings its own volk.
add_library(denox_vkhost STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/vkhost/vk_host.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/vkhost/vk_resources.cpp
)
target_include_directories(denox_vkhost PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(denox_vkhost PUBLIC denox_lib denox_volk)

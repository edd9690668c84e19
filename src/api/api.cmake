# libdenox.so (target denox_lib; `denox` is the CLI): the C API (include/denox/denox.h) over the compiler, kernels, cache and runtime.
# Only denox_* symbols are exported (denox.map); every static library linked in (volk, glslang,
# onnx, protobuf's pieces we own) stays private, so an engine using volk or glslang itself
# does not clash with ours.
add_library(denox_lib SHARED
  ${CMAKE_CURRENT_SOURCE_DIR}/api/api_errors.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/api/api_log.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/api/api_context.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/api/api_compile.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/api/api_plan_check.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/api/api_report.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/api/api_model.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/api/api_background.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/api/api_reload.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/api/api_calibration.cpp
)
# Measure (pipeline step 6) times edges on the device through the runtime; the API drives it.
# Its crash journal needs only the cache (tests/cache tests it without a device).
add_library(denox_measure_journal STATIC ${CMAKE_CURRENT_SOURCE_DIR}/runtime/measure/crash_journal.cpp)
target_include_directories(denox_measure_journal PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(denox_measure_journal PUBLIC denox_cache)
add_library(denox_measure STATIC ${CMAKE_CURRENT_SOURCE_DIR}/runtime/measure/measure.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/measure/clock_keeper.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/measure/timing_objects.cpp)
target_include_directories(denox_measure PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(denox_measure PUBLIC denox_measure_journal denox_kernels denox_cache denox_vulkan)
target_include_directories(denox_lib PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:include>)
target_include_directories(denox_lib PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_definitions(denox_lib PRIVATE DENOX_VERSION_STRING="${PROJECT_VERSION}" VK_NO_PROTOTYPES)
target_link_libraries(denox_lib PUBLIC Vulkan::Headers
  PRIVATE nlohmann_json::nlohmann_json denox_measure denox_kernels denox_cache denox_plan denox_vulkan denox_compiler spdlog::spdlog)
set_target_properties(denox_lib PROPERTIES
  OUTPUT_NAME denox
  LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib
  C_VISIBILITY_PRESET hidden CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
  LINK_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/api/denox.map)
target_link_options(denox_lib PRIVATE
  "LINKER:--version-script=${CMAKE_CURRENT_SOURCE_DIR}/api/denox.map"
  "LINKER:--exclude-libs,ALL" "LINKER:--no-undefined")

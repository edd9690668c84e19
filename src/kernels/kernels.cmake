# The portable kernels: shaders/*.comp embedded at build time, compiled at run time with the
# glslang library, and the lowering of a graph into a plan of dispatches over them.
# Included from src/CMakeLists.txt, so CMAKE_CURRENT_SOURCE_DIR is src/.
find_package(glslang CONFIG REQUIRED)

# Every shader file (kernels and the files they #include). CONFIGURE_DEPENDS re-globs on a
# build, so adding a shader needs no manual re-run of CMake; DEPENDS below rebuilds the
# generated source whenever a shader's text changes.
file(GLOB DENOX_SHADER_FILES CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/shaders/*.comp
  ${PROJECT_SOURCE_DIR}/shaders/*.glsl)
list(SORT DENOX_SHADER_FILES)
set(DENOX_EMBEDDED_SHADERS_CPP ${CMAKE_CURRENT_BINARY_DIR}/kernels_generated/embedded_shaders.cpp)
string(REPLACE ";" "|" _denox_shader_arg "${DENOX_SHADER_FILES}")
add_custom_command(
  OUTPUT ${DENOX_EMBEDDED_SHADERS_CPP}
  COMMAND ${CMAKE_COMMAND} -DOUTPUT=${DENOX_EMBEDDED_SHADERS_CPP} "-DSHADERS=${_denox_shader_arg}"
          -P ${CMAKE_CURRENT_SOURCE_DIR}/kernels/embed_shaders.cmake
  DEPENDS ${DENOX_SHADER_FILES} ${CMAKE_CURRENT_SOURCE_DIR}/kernels/embed_shaders.cmake
  COMMENT "Embedding shaders/*.comp"
  VERBATIM)

add_library(denox_kernels STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/shader_source.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/shader_compiler.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/plan_builder.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/conv2d_layout.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/conv2d.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/conv2d_coopmat.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/conv2d_coopmat_q8.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/quant.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/quantize.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/pool2d.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/upsample_nearest.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/copy.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/pad.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/binary.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/unary.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/eltwise.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/lower_portable.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/conv_fusions.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/implementations.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/implementations_q8.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/kernels/coop_config_space.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/compiler/supergraph/edge_graph.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/compiler/calibrate/calibrate.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/compiler/calibrate/calibration_file.cpp
  # The autotuner's graph stages live under compiler/ (one folder per pipeline step) but build
  # into this library: they need the kernels' patterns, and build_portable_plan needs them.
  ${CMAKE_CURRENT_SOURCE_DIR}/compiler/supergraph/supergraph.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/compiler/prune/prune.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/compiler/cost_model/cost_model.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/compiler/schedule/schedule.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/compiler/schedule/share_pipelines.cpp
  ${DENOX_EMBEDDED_SHADERS_CPP}
)
target_include_directories(denox_kernels PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(denox_kernels
  PUBLIC denox_compiler denox_plan
  # denox_reference: the nearest-resize index rule; denox_cache: XXH3 for shader hashes.
  PRIVATE denox_reference denox_cache nlohmann_json::nlohmann_json glslang::glslang glslang::SPIRV glslang::glslang-default-resource-limits)

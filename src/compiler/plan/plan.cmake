# The plan (plan.hpp) and its flatbuffers serialization (plan.fbs, plan_serialize.hpp).
# Included from src/CMakeLists.txt, so CMAKE_CURRENT_SOURCE_DIR is src/.

# Debian ships FlatBuffersConfig.cmake, other installs flatbuffers-config.cmake: accept both.
find_package(flatbuffers CONFIG REQUIRED NAMES flatbuffers FlatBuffers)

# flatc must be the version of the headers (the generated code static_asserts it). Prefer the
# package's own flatc target; fall back to the one on PATH. (Debian's package has no
# flatbuffers_generate_headers macro, so the rule is written out here.)
if(TARGET flatbuffers::flatc)
  set(DENOX_FLATC flatbuffers::flatc)
else()
  find_program(DENOX_FLATC flatc REQUIRED)
endif()

set(DENOX_PLAN_FBS ${CMAKE_CURRENT_SOURCE_DIR}/compiler/plan/plan.fbs)
# Generated into a directory of its own, mirroring the source path, so that the header is
# included as "compiler/plan/plan_generated.h" like everything else.
set(DENOX_PLAN_GEN_ROOT ${CMAKE_CURRENT_BINARY_DIR}/plan_generated)
set(DENOX_PLAN_GEN_HEADER ${DENOX_PLAN_GEN_ROOT}/compiler/plan/plan_generated.h)
add_custom_command(
  OUTPUT ${DENOX_PLAN_GEN_HEADER}
  COMMAND ${DENOX_FLATC} --cpp --scoped-enums --gen-mutable
          -o ${DENOX_PLAN_GEN_ROOT}/compiler/plan ${DENOX_PLAN_FBS}
  DEPENDS ${DENOX_PLAN_FBS} ${DENOX_FLATC}
  COMMENT "flatc: plan.fbs -> plan_generated.h"
  VERBATIM)
add_custom_target(denox_plan_schema DEPENDS ${DENOX_PLAN_GEN_HEADER})

add_library(denox_plan STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/compiler/plan/plan.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/compiler/plan/plan_validate.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/compiler/plan/plan_serialize.cpp
  ${DENOX_PLAN_GEN_HEADER}
)
add_dependencies(denox_plan denox_plan_schema)
target_include_directories(denox_plan PUBLIC ${CMAKE_CURRENT_SOURCE_DIR} ${DENOX_PLAN_GEN_ROOT})
target_link_libraries(denox_plan PUBLIC denox_compiler flatbuffers::flatbuffers)

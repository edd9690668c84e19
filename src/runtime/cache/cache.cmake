# The SQLite plan/SPIR-V/pipeline cache and the read-only shipped cache beside it
# (src/runtime/cache/README.md).
find_package(SQLite3 REQUIRED)
# libxxhash-dev ships neither a CMake config nor (everywhere) a .pc file; look for it directly.
find_path(DENOX_XXHASH_INCLUDE_DIR xxhash.h REQUIRED)
find_library(DENOX_XXHASH_LIBRARY NAMES xxhash REQUIRED)

add_library(denox_cache STATIC
  runtime/cache/content_hash.cpp
  runtime/cache/cache_key.cpp
  runtime/cache/sqlite_db.cpp
  runtime/cache/cache_open.cpp
  runtime/cache/plan_cache.cpp
  runtime/cache/layered_cache.cpp
  runtime/cache/cache_admin.cpp
)
target_include_directories(denox_cache PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_include_directories(denox_cache PRIVATE ${DENOX_XXHASH_INCLUDE_DIR})
# sqlite and xxhash stay private: the headers expose neither.
target_link_libraries(denox_cache PUBLIC denox_common PRIVATE SQLite::SQLite3 ${DENOX_XXHASH_LIBRARY})

# The SQLite plan/SPIR-V/pipeline cache. Filled in by the cache work.

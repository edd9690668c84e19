# Plan serialization (flatbuffers). Filled in by the plan-serialization work.

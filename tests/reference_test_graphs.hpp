// Hand-built graphs and random tensors for the CPU reference tests (test_reference_ops.cpp,
// test_reference_executor.cpp).
#pragma once

#include <catch2/catch.hpp>

#include <array>
#include <random>
#include <string>
#include <vector>

#include "common/host_tensor.hpp"
#include "compiler/ir/graph.hpp"

namespace denox::reftest {

// Builds graphs by hand: constant-shaped tensors unless a shape of ValueIds is given.
struct GraphBuilder {
  compiler::Graph g;

  compiler::ValueId c(int64_t v) { return g.program.constant(v); }
  std::vector<compiler::ValueId> cs(const std::vector<int64_t>& shape) {
    std::vector<compiler::ValueId> ids;
    for (int64_t d : shape) ids.push_back(c(d));
    return ids;
  }
  compiler::TensorId input(const std::string& name, std::vector<compiler::ValueId> shape) {
    compiler::TensorId id = g.add_tensor({name, compiler::DType::F32, std::move(shape), {}, {}});
    g.inputs.push_back(id);
    return id;
  }
  compiler::TensorId constant(const std::string& name, const std::vector<int64_t>& shape, std::vector<float> data) {
    compiler::Tensor t{name, compiler::DType::F32, cs(shape), {}, {}};
    t.f32_data = std::move(data);
    return g.add_tensor(std::move(t));
  }
  compiler::TensorId op(const std::string& name, const std::string& onnx_op, compiler::OpAttrs attrs, std::vector<compiler::TensorId> inputs,
              std::vector<compiler::ValueId> out_shape, compiler::DType dtype = compiler::DType::F32) {
    compiler::TensorId out = g.add_tensor({name + "_out", dtype, std::move(out_shape), {}, {}});
    g.ops.push_back({name, onnx_op, std::move(attrs), std::move(inputs), out});
    return out;
  }
};

inline HostTensor host(std::vector<int64_t> shape, std::vector<float> data) {
  HostTensor t;
  t.shape = std::move(shape);
  t.f32 = std::move(data);
  return t;
}

// Non-zero random values in [-1, -0.05] u [0.05, 1], reproducible.
inline std::vector<float> random_values(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(0.05f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = (rng() & 1) ? dist(rng) : -dist(rng);
  return v;
}

inline size_t count(const std::vector<int64_t>& shape) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

inline HostTensor random_tensor(std::vector<int64_t> shape, unsigned seed) {
  size_t n = count(shape);
  return host(std::move(shape), random_values(n, seed));
}

inline void require_close(const std::vector<float>& got, const std::vector<float>& expected, float tol = 1e-5f) {
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    REQUIRE(got[i] == Approx(expected[i]).margin(tol));
  }
}

inline compiler::ConvAttrs conv_attrs(GraphBuilder& b, std::array<int64_t, 2> k, std::array<int64_t, 2> s, std::array<int64_t, 2> d,
                     std::array<int64_t, 2> pb, std::array<int64_t, 2> pe, bool bias) {
  compiler::ConvAttrs a;
  a.kernel = k;
  a.stride = s;
  a.dilation = d;
  a.pad_begin = {b.c(pb[0]), b.c(pb[1])};
  a.pad_end = {b.c(pe[0]), b.c(pe[1])};
  a.has_bias = bias;
  return a;
}

inline compiler::PoolAttrs pool_attrs(GraphBuilder& b, compiler::PoolKind kind, std::array<int64_t, 2> k, std::array<int64_t, 2> s,
                     std::array<int64_t, 2> d, std::array<int64_t, 2> pb, std::array<int64_t, 2> pe,
                     bool count_include_pad = false) {
  compiler::PoolAttrs a;
  a.kind = kind;
  a.kernel = k;
  a.stride = s;
  a.dilation = d;
  a.pad_begin = {b.c(pb[0]), b.c(pb[1])};
  a.pad_end = {b.c(pe[0]), b.c(pe[1])};
  a.count_include_pad = count_include_pad;
  return a;
}

}  // namespace denox::reftest

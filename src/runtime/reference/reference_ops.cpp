#include "runtime/reference/reference_ops.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <system_error>
#include <thread>
#include <type_traits>

#include "common/error.hpp"
#include "runtime/reference/reference_checks.hpp"

namespace denox::reference {

using compiler::Activation;
using compiler::ActivationAttrs;
using compiler::BinaryKind;
using compiler::CoordinateMode;
using compiler::NearestMode;
using compiler::PoolKind;
using compiler::UpsampleAttrs;

TensorView TensorView::of(const HostTensor& t) {
  TensorView v;
  v.shape = t.shape;
  v.is_int64 = t.is_int64;
  if (t.is_int64) {
    v.i64 = t.i64;
  } else {
    v.f32 = t.f32;
  }
  return v;
}

size_t TensorView::element_count() const { return is_int64 ? i64.size() : f32.size(); }

namespace detail {

void check_view(const TensorView& v, const char* what) {
  size_t n = checked_element_count(v.shape, what);
  if (v.element_count() != n) {
    fail(ErrorCode::InvalidArgument, std::string(what) + " has shape " + shape_string(v.shape) + " (" +
                                         std::to_string(n) + " elements) but holds " +
                                         std::to_string(v.element_count()) + " values");
  }
}

void require_f32(const TensorView& v, const char* what) {
  if (v.is_int64) fail(ErrorCode::Unsupported, std::string(what) + " is int64; this op takes float32");
  check_view(v, what);
}

void require_rank(const TensorView& v, size_t rank, const char* what) {
  if (v.shape.size() != rank) {
    fail(ErrorCode::ShapeMismatch, std::string(what) + " must have rank " + std::to_string(rank) + ", got " +
                                       shape_string(v.shape));
  }
}

void check_out_shape(const std::vector<int64_t>& from_inputs, const std::vector<int64_t>& given) {
  if (from_inputs != given) {
    fail(ErrorCode::ShapeMismatch, "the graph gives the output shape " + shape_string(given) +
                                       " but the inputs and attributes give " + shape_string(from_inputs));
  }
}

HostTensor make_output(const std::vector<int64_t>& shape, bool is_int64) {
  HostTensor t;
  t.shape = shape;
  t.is_int64 = is_int64;
  size_t n = checked_element_count(shape, "the output");
  if (is_int64) {
    t.i64.resize(n);
  } else {
    t.f32.resize(n);
  }
  return t;
}

}  // namespace detail

using namespace detail;

namespace {

// Runs fn(begin, end) over [0, count) split into contiguous chunks, one per hardware thread.
// Workers only compute (every check happened before), but an exception (bad_alloc) is still
// carried back to the caller instead of terminating the process.
template <typename Fn> void parallel_for(size_t count, Fn&& fn) {
  size_t threads = std::min<size_t>({std::max(1u, std::thread::hardware_concurrency()), count, 16});
  if (threads <= 1) {
    fn(size_t{0}, count);
    return;
  }
  std::vector<std::exception_ptr> errors(threads);
  std::vector<std::thread> workers;
  size_t chunk = (count + threads - 1) / threads;
  auto run = [&](size_t t) {
    try {
      fn(t * chunk, std::min(count, (t + 1) * chunk));
    } catch (...) {
      errors[t] = std::current_exception();
    }
  };
  for (size_t t = 1; t < threads && t * chunk < count; ++t) {
    try {
      workers.emplace_back(run, t);
    } catch (const std::system_error&) {
      run(t);  // no thread to be had: do the chunk here
    }
  }
  run(0);
  for (auto& w : workers) w.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// --- window geometry shared by conv and pooling -------------------------------------------

void check_window(const Window2d& w) {
  for (int a = 0; a < 2; ++a) {
    if (w.kernel[a] < 1 || w.stride[a] < 1 || w.dilation[a] < 1) {
      fail(ErrorCode::InvalidArgument, "kernel, strides and dilations must be positive, got kernel " +
                                           std::to_string(w.kernel[a]) + ", stride " + std::to_string(w.stride[a]) +
                                           ", dilation " + std::to_string(w.dilation[a]) + " on spatial axis " +
                                           std::to_string(a));
    }
    if (w.pad_begin[a] < 0 || w.pad_end[a] < 0) {
      fail(ErrorCode::InvalidArgument, "pads must be non-negative, got " + std::to_string(w.pad_begin[a]) + " and " +
                                           std::to_string(w.pad_end[a]) + " on spatial axis " + std::to_string(a));
    }
  }
}

// (in + pads - dilated kernel) along one axis: the span the window start can move over.
int64_t window_travel(int64_t in, const Window2d& w, int a) {
  int64_t travel = in + w.pad_begin[a] + w.pad_end[a] - w.dilation[a] * (w.kernel[a] - 1) - 1;
  if (travel < 0) {
    fail(ErrorCode::ShapeMismatch, "the dilated kernel (" + std::to_string(w.dilation[a] * (w.kernel[a] - 1) + 1) +
                                       ") is larger than the padded input (" +
                                       std::to_string(in + w.pad_begin[a] + w.pad_end[a]) + ") on spatial axis " +
                                       std::to_string(a));
  }
  return travel;
}

// Kernel taps [lo, hi) of output position `o` whose input index o*s - pb + j*d lies in
// [first, last). The index grows with j, so the taps that hit any interval are contiguous.
struct TapRange {
  int64_t lo = 0, hi = 0;
  int64_t count() const { return hi - lo; }
};

TapRange taps_inside(int64_t o, const Window2d& w, int a, int64_t first, int64_t last) {
  int64_t start = o * w.stride[a] - w.pad_begin[a], d = w.dilation[a];
  TapRange r{compiler::div_ceil(first - start, d), compiler::div_floor(last - 1 - start, d) + 1};
  r.lo = std::max<int64_t>(r.lo, 0);
  r.hi = std::min<int64_t>(r.hi, w.kernel[a]);
  if (r.hi < r.lo) r.hi = r.lo;
  return r;
}

}  // namespace

size_t checked_element_count(const std::vector<int64_t>& shape, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) fail(ErrorCode::InvalidArgument, what + " has a negative extent: " + shape_string(shape));
  }
  for (int64_t d : shape) {
    if (d == 0) return 0;
    if (__builtin_mul_overflow(n, d, &n) || n > kMaxTensorElements) {
      fail(ErrorCode::InvalidArgument, what + " would have shape " + shape_string(shape) + ", more than " +
                                           std::to_string(kMaxTensorElements) +
                                           " elements; refusing to allocate it (is the resolution right?)");
    }
  }
  return static_cast<size_t>(n);
}

// --- Conv ---------------------------------------------------------------------------------

HostTensor conv2d(const TensorView& x, const TensorView& w, const TensorView* bias, const Window2d& win,
                  const std::vector<int64_t>& out_shape) {
  require_f32(x, "input X");
  require_f32(w, "weights W");
  require_rank(x, 4, "input X");
  require_rank(w, 4, "weights W");
  check_window(win);
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t M = w.shape[0], KH = w.shape[2], KW = w.shape[3];
  if (w.shape[1] != C) {
    fail(ErrorCode::ShapeMismatch, "input X has " + std::to_string(C) + " channels but weights W (" +
                                       shape_string(w.shape) + ") expect " + std::to_string(w.shape[1]) +
                                       " (only group=1 is supported)");
  }
  if (KH != win.kernel[0] || KW != win.kernel[1]) {
    fail(ErrorCode::ShapeMismatch, "weights W are " + shape_string(w.shape) + " but kernel_shape is " +
                                       std::to_string(win.kernel[0]) + "x" + std::to_string(win.kernel[1]));
  }
  if (bias) {
    require_f32(*bias, "bias B");
    if (bias->shape != std::vector<int64_t>{M}) {
      fail(ErrorCode::ShapeMismatch, "bias B has shape " + shape_string(bias->shape) + ", expected " +
                                         std::to_string(M) + " (one per output channel)");
    }
  }
  const int64_t OH = window_travel(H, win, 0) / win.stride[0] + 1;
  const int64_t OW = window_travel(W, win, 1) / win.stride[1] + 1;
  check_out_shape({N, M, OH, OW}, out_shape);
  HostTensor out = make_output(out_shape, false);
  if (out.f32.empty()) return out;

  // For each kx, the output columns whose input column lies inside the image: the inner loop
  // then runs without a bounds test.
  std::vector<TapRange> columns(static_cast<size_t>(KW));
  for (int64_t kx = 0; kx < KW; ++kx) {
    int64_t offset = kx * win.dilation[1] - win.pad_begin[1];  // input column = ox * sx + offset
    int64_t lo = std::max<int64_t>(0, compiler::div_ceil(-offset, win.stride[1]));
    int64_t hi = std::min<int64_t>(OW, compiler::div_floor(W - 1 - offset, win.stride[1]) + 1);
    columns[static_cast<size_t>(kx)] = {lo, std::max(lo, hi)};
  }

  // One output row (n, all M channels, oy) at a time: its M x OW double accumulators and the
  // input rows it reads stay in cache while every (ic, ky, oc, kx) tap streams over them.
  const float* xd = x.f32.data();
  const float* wd = w.f32.data();
  float* od = out.f32.data();
  const int64_t sx = win.stride[1];
  parallel_for(static_cast<size_t>(N * OH), [&](size_t row_begin, size_t row_end) {
    std::vector<double> acc(static_cast<size_t>(M * OW));
    for (size_t row = row_begin; row < row_end; ++row) {
      const int64_t n = static_cast<int64_t>(row) / OH, oy = static_cast<int64_t>(row) % OH;
      for (int64_t oc = 0; oc < M; ++oc) {
        double b = bias ? static_cast<double>(bias->f32[static_cast<size_t>(oc)]) : 0.0;
        std::fill(acc.begin() + oc * OW, acc.begin() + (oc + 1) * OW, b);
      }
      for (int64_t ic = 0; ic < C; ++ic) {
        for (int64_t ky = 0; ky < KH; ++ky) {
          const int64_t iy = oy * win.stride[0] - win.pad_begin[0] + ky * win.dilation[0];
          if (iy < 0 || iy >= H) continue;  // a padding row contributes zero
          const float* in_row = xd + ((n * C + ic) * H + iy) * W;
          for (int64_t oc = 0; oc < M; ++oc) {
            double* acc_row = acc.data() + oc * OW;
            const float* w_row = wd + ((oc * C + ic) * KH + ky) * KW;
            for (int64_t kx = 0; kx < KW; ++kx) {
              const double wv = w_row[kx];
              const TapRange& cols = columns[static_cast<size_t>(kx)];
              const int64_t offset = kx * win.dilation[1] - win.pad_begin[1];  // input column - ox * sx
              if (sx == 1) {
                // The common case. Blocks of a fixed length let -O2 (GCC's "very cheap" vector
                // cost model, which refuses loops that need a scalar remainder) vectorize it.
                int64_t ox = cols.lo;
                for (; ox + 8 <= cols.hi; ox += 8) {
                  for (int64_t j = 0; j < 8; ++j) acc_row[ox + j] += wv * static_cast<double>(in_row[ox + j + offset]);
                }
                for (; ox < cols.hi; ++ox) acc_row[ox] += wv * static_cast<double>(in_row[ox + offset]);
              } else {
                for (int64_t ox = cols.lo; ox < cols.hi; ++ox) {
                  acc_row[ox] += wv * static_cast<double>(in_row[ox * sx + offset]);
                }
              }
            }
          }
        }
      }
      for (int64_t oc = 0; oc < M; ++oc) {
        float* dst = od + ((n * M + oc) * OH + oy) * OW;
        for (int64_t ox = 0; ox < OW; ++ox) dst[ox] = static_cast<float>(acc[static_cast<size_t>(oc * OW + ox)]);
      }
    }
  });
  return out;
}

// --- MaxPool / AveragePool ----------------------------------------------------------------

HostTensor pool2d(const TensorView& x, PoolKind kind, const Window2d& win, bool count_include_pad,
                  const std::vector<int64_t>& out_shape) {
  require_f32(x, "input X");
  require_rank(x, 4, "input X");
  check_window(win);
  const int64_t N = x.shape[0], C = x.shape[1];
  const std::array<int64_t, 2> in{x.shape[2], x.shape[3]};
  if (out_shape.size() != 4 || out_shape[0] != N || out_shape[1] != C) {
    fail(ErrorCode::ShapeMismatch, "the graph gives the output shape " + shape_string(out_shape) + " for input " +
                                       shape_string(x.shape) + "; batch and channels must be kept");
  }
  // The graph's extent is the floor one, or with ceil_mode anything up to the ceil one (ONNX and
  // PyTorch drop a last window that would start in the right padding).
  std::array<std::vector<TapRange>, 2> inside, inside_padded;
  for (int a = 0; a < 2; ++a) {
    const int64_t travel = window_travel(in[a], win, a), out = out_shape[static_cast<size_t>(2 + a)];
    const int64_t floor_out = travel / win.stride[a] + 1, ceil_out = compiler::div_ceil(travel, win.stride[a]) + 1;
    if (out < floor_out || out > ceil_out) {
      fail(ErrorCode::ShapeMismatch, "output extent " + std::to_string(out) + " on spatial axis " +
                                         std::to_string(a) + " is neither the floor (" + std::to_string(floor_out) +
                                         ") nor within the ceil_mode (" + std::to_string(ceil_out) +
                                         ") extent for input extent " + std::to_string(in[a]));
    }
    for (int64_t o = 0; o < out; ++o) {
      TapRange r = taps_inside(o, win, a, 0, in[a]);
      if (r.count() == 0) {
        fail(ErrorCode::ShapeMismatch, "the pooling window of output position " + std::to_string(o) +
                                           " on spatial axis " + std::to_string(a) +
                                           " covers only padding (pads too large for the kernel)");
      }
      inside[a].push_back(r);
      inside_padded[a].push_back(taps_inside(o, win, a, -win.pad_begin[a], in[a] + win.pad_end[a]));
    }
  }
  HostTensor out = make_output(out_shape, false);
  const int64_t OH = out_shape[2], OW = out_shape[3], H = in[0], W = in[1];
  const float* xd = x.f32.data();
  float* od = out.f32.data();
  for (int64_t plane = 0; plane < N * C; ++plane) {
    const float* src = xd + plane * H * W;
    float* dst = od + plane * OH * OW;
    for (int64_t oy = 0; oy < OH; ++oy) {
      const TapRange ry = inside[0][static_cast<size_t>(oy)];
      const int64_t y0 = oy * win.stride[0] - win.pad_begin[0];
      for (int64_t ox = 0; ox < OW; ++ox) {
        const TapRange rx = inside[1][static_cast<size_t>(ox)];
        const int64_t x0 = ox * win.stride[1] - win.pad_begin[1];
        if (kind == PoolKind::Max) {
          float m = -std::numeric_limits<float>::infinity();
          for (int64_t ky = ry.lo; ky < ry.hi; ++ky) {
            const float* row = src + (y0 + ky * win.dilation[0]) * W;
            for (int64_t kx = rx.lo; kx < rx.hi; ++kx) {
              float v = row[x0 + kx * win.dilation[1]];
              if (v > m || std::isnan(v)) m = v;  // once NaN, nothing compares greater: NaN stays
            }
          }
          dst[oy * OW + ox] = m;
        } else {
          double sum = 0.0;
          for (int64_t ky = ry.lo; ky < ry.hi; ++ky) {
            const float* row = src + (y0 + ky * win.dilation[0]) * W;
            for (int64_t kx = rx.lo; kx < rx.hi; ++kx) sum += row[x0 + kx * win.dilation[1]];
          }
          int64_t divisor = count_include_pad
                                ? inside_padded[0][static_cast<size_t>(oy)].count() *
                                      inside_padded[1][static_cast<size_t>(ox)].count()
                                : ry.count() * rx.count();
          dst[oy * OW + ox] = static_cast<float>(sum / static_cast<double>(divisor));
        }
      }
    }
  }
  return out;
}

// --- activations --------------------------------------------------------------------------

HostTensor activation(const TensorView& x, const ActivationAttrs& attrs) {
  require_f32(x, "input X");
  HostTensor out = make_output(x.shape, false);
  auto map = [&](auto f) {
    for (size_t i = 0; i < x.f32.size(); ++i) out.f32[i] = f(x.f32[i]);
  };
  // Every comparison is written so that a NaN input falls through to `v` (NaN out).
  switch (attrs.kind) {
    case Activation::Relu: map([](float v) { return v < 0.0f ? 0.0f : v; }); break;
    case Activation::LeakyRelu: map([a = attrs.alpha](float v) { return v < 0.0f ? a * v : v; }); break;
    case Activation::Sigmoid:
      map([](float v) { return static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(v)))); });
      break;
    case Activation::Tanh: map([](float v) { return static_cast<float>(std::tanh(static_cast<double>(v))); }); break;
    case Activation::Clip:
      // numpy.clip order: max(x, min) first, then min(., max); min > max gives max everywhere.
      map([lo = attrs.min, hi = attrs.max](float v) {
        float r = v < lo ? lo : v;
        return r > hi ? hi : r;
      });
      break;
  }
  return out;
}

// --- binary with broadcasting -------------------------------------------------------------

std::vector<int64_t> broadcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t k = 0; k < rank; ++k) {
    // Align from the right; a missing leading axis is an extent of 1.
    int64_t da = k + a.size() >= rank ? a[k + a.size() - rank] : 1;
    int64_t db = k + b.size() >= rank ? b[k + b.size() - rank] : 1;
    if (da != db && da != 1 && db != 1) {
      fail(ErrorCode::ShapeMismatch, "shapes " + shape_string(a) + " and " + shape_string(b) +
                                         " do not broadcast (axis " + std::to_string(k) + ": " +
                                         std::to_string(da) + " vs " + std::to_string(db) + ")");
    }
    out[k] = da == 1 ? db : da;
  }
  return out;
}

namespace {

// Element strides of `shape` seen through the broadcast output of rank `rank`: 0 on axes that
// are missing or of extent 1, so the same element is read along them.
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& shape, size_t rank) {
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i + rank - shape.size()] = shape[i] == 1 ? 0 : stride;
    stride *= shape[i];
  }
  return strides;
}

}  // namespace

HostTensor binary(const TensorView& a, const TensorView& b, BinaryKind kind, const std::vector<int64_t>& out_shape) {
  require_f32(a, "input A");
  require_f32(b, "input B");
  check_out_shape(broadcast_shape(a.shape, b.shape), out_shape);
  HostTensor out = make_output(out_shape, false);
  if (out.f32.empty()) return out;
  const size_t rank = out_shape.size();
  const auto sa = broadcast_strides(a.shape, rank), sb = broadcast_strides(b.shape, rank);
  // Rows along the last axis; an odometer over the other axes gives each row's start.
  const int64_t inner = rank ? out_shape[rank - 1] : 1;
  const int64_t step_a = rank ? sa[rank - 1] : 0, step_b = rank ? sb[rank - 1] : 0;
  const size_t rows = out.f32.size() / static_cast<size_t>(inner);
  auto run = [&](auto op) {
    std::vector<int64_t> index(rank, 0);
    float* dst = out.f32.data();
    for (size_t r = 0; r < rows; ++r) {
      int64_t off_a = 0, off_b = 0;
      for (size_t k = 0; k + 1 < rank; ++k) {
        off_a += index[k] * sa[k];
        off_b += index[k] * sb[k];
      }
      const float* pa = a.f32.data() + off_a;
      const float* pb = b.f32.data() + off_b;
      for (int64_t j = 0; j < inner; ++j) *dst++ = op(pa[j * step_a], pb[j * step_b]);
      for (size_t k = rank - 1; k-- > 0;) {
        if (++index[k] < out_shape[k]) break;
        index[k] = 0;
      }
    }
  };
  switch (kind) {
    case BinaryKind::Add: run([](float p, float q) { return p + q; }); break;
    case BinaryKind::Sub: run([](float p, float q) { return p - q; }); break;
    case BinaryKind::Mul: run([](float p, float q) { return p * q; }); break;
    case BinaryKind::Div: run([](float p, float q) { return p / q; }); break;  // IEEE: x/0 = +-inf or NaN
  }
  return out;
}

// --- nearest upsample ---------------------------------------------------------------------

std::vector<int64_t> nearest_source_indices(int64_t in_extent, int64_t scale, CoordinateMode coordinate_mode,
                                            NearestMode nearest_mode) {
  const int64_t out_extent = in_extent * scale;
  const double s = static_cast<double>(scale), in = static_cast<double>(in_extent),
               out = static_cast<double>(out_extent);
  std::vector<int64_t> source(static_cast<size_t>(out_extent));
  for (int64_t xi = 0; xi < out_extent; ++xi) {
    const double x = static_cast<double>(xi);
    // ONNX Resize coordinate_transformation_mode (x_resized -> x_original).
    double src = 0.0;
    switch (coordinate_mode) {
      case CoordinateMode::HalfPixel: src = (x + 0.5) / s - 0.5; break;
      case CoordinateMode::HalfPixelSymmetric: {
        // adjustment = output_width_int / output_width = 1 for integer scales, so offset = 0;
        // kept in full so the formula reads like the spec.
        const double adjustment = out / (s * in), center = in / 2.0, offset = center * (1.0 - adjustment);
        src = offset + (x + 0.5) / s - 0.5;
        break;
      }
      case CoordinateMode::PytorchHalfPixel: src = out > 1 ? (x + 0.5) / s - 0.5 : 0.0; break;
      case CoordinateMode::Asymmetric: src = x / s; break;
      case CoordinateMode::AlignCorners:
        // Numerator first: an exact integer quotient then comes out exact.
        src = out_extent == 1 ? 0.0 : (x * (in - 1.0)) / (out - 1.0);
        break;
      case CoordinateMode::TfHalfPixelForNearest: src = (x + 0.5) / s; break;
    }
    // ONNX nearest_mode on the fraction (the reference implementation's _nearest_coeffs).
    const double fl = std::floor(src), frac = src - fl;
    double pick = fl;
    switch (nearest_mode) {
      case NearestMode::RoundPreferFloor: pick = frac <= 0.5 ? fl : fl + 1; break;
      case NearestMode::RoundPreferCeil: pick = frac < 0.5 ? fl : fl + 1; break;
      case NearestMode::Floor: pick = fl; break;
      case NearestMode::Ceil: pick = frac == 0.0 ? fl : fl + 1; break;
    }
    source[static_cast<size_t>(xi)] = std::clamp<int64_t>(static_cast<int64_t>(pick), 0, in_extent - 1);
  }
  return source;
}

HostTensor upsample_nearest(const TensorView& x, const UpsampleAttrs& attrs, const std::vector<int64_t>& out_shape) {
  require_f32(x, "input X");
  if (x.shape.size() < 2) fail(ErrorCode::ShapeMismatch, "input X must have rank 2 or more, got " + shape_string(x.shape));
  if (attrs.scale[0] < 1 || attrs.scale[1] < 1) {
    fail(ErrorCode::InvalidArgument, "upsampling scales must be positive integers, got " +
                                         std::to_string(attrs.scale[0]) + " and " + std::to_string(attrs.scale[1]));
  }
  const size_t rank = x.shape.size();
  const int64_t H = x.shape[rank - 2], W = x.shape[rank - 1];
  std::vector<int64_t> expected = x.shape;
  if (__builtin_mul_overflow(H, attrs.scale[0], &expected[rank - 2]) ||
      __builtin_mul_overflow(W, attrs.scale[1], &expected[rank - 1])) {
    fail(ErrorCode::InvalidArgument, "upsampled extent overflows");
  }
  check_out_shape(expected, out_shape);
  HostTensor out = make_output(out_shape, false);
  if (out.f32.empty()) return out;
  const auto src_y = nearest_source_indices(H, attrs.scale[0], attrs.coordinate_mode, attrs.nearest_mode);
  const auto src_x = nearest_source_indices(W, attrs.scale[1], attrs.coordinate_mode, attrs.nearest_mode);
  const int64_t OH = expected[rank - 2], OW = expected[rank - 1];
  const size_t planes = x.f32.size() / static_cast<size_t>(H * W);
  float* dst = out.f32.data();
  for (size_t p = 0; p < planes; ++p) {
    const float* plane = x.f32.data() + p * static_cast<size_t>(H * W);
    for (int64_t oy = 0; oy < OH; ++oy) {
      const float* row = plane + src_y[static_cast<size_t>(oy)] * W;
      for (int64_t ox = 0; ox < OW; ++ox) *dst++ = row[src_x[static_cast<size_t>(ox)]];
    }
  }
  return out;
}
}  // namespace denox::reference

// The graphs of coop_cases.hpp.
#include "coop_cases.hpp"

#include <array>

using namespace denox::compiler;

namespace denox::testing {

ActivationAttrs relu() { return ActivationAttrs{}; }

namespace {

// A 2x2 max-pool of stride 2 (pads and ceil mode are GraphBuilder::pool's arguments).
PoolAttrs max_pool_2x2() {
  PoolAttrs p;
  p.kernel = {2, 2};
  p.stride = {2, 2};
  return p;
}
ActivationAttrs sigmoid() {
  ActivationAttrs a;
  a.kind = Activation::Sigmoid;
  return a;
}

// A zero Pad of the spatial axes: begin h, begin w, end h, end w.
PadAttrs zero_pad(GraphBuilder& b, std::array<int64_t, 4> pads) {
  PadAttrs a;
  a.begin = {b.c(0), b.c(0), b.c(pads[0]), b.c(pads[1])};
  a.end = {b.c(0), b.c(0), b.c(pads[2]), b.c(pads[3])};
  return a;
}

}  // namespace

std::vector<Case> cases() {
  std::vector<Case> all;
  {
    Case c{"3x3 19->37 bias relu (width a multiple of 4: the vector paths)", {}, 37, 52, 1, 1};
    const TensorId x = c.b.input("x", 19);
    c.b.output(c.b.activation("relu", c.b.conv("conv", x, 37, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 7), relu()));
    all.push_back(std::move(c));
  }
  {
    Case c{"1x1 5->9 leaky, 1x1 9->17, 3x3 no pad 17->3 tanh (no bias), 1x1 5->3, 3x3 3->8 clip (odd width: scalar paths)", {}, 29, 41, 5, 5};
    const TensorId x = c.b.input("x", 5);
    ActivationAttrs leaky;
    leaky.kind = Activation::LeakyRelu;
    leaky.alpha = 0.1f;
    const TensorId a = c.b.activation("leaky", c.b.conv("pw", x, 9, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, 11), leaky);
    c.b.output(a);
    const TensorId x2 = c.b.conv("widen", a, 17, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, 12);
    ActivationAttrs tanh_a;
    tanh_a.kind = Activation::Tanh;
    c.b.output(c.b.activation("tanh", c.b.conv("valid", x2, 3, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}, false, 13), tanh_a));
    ActivationAttrs clip;
    clip.kind = Activation::Clip;
    clip.min = -0.25f, clip.max = 0.5f;
    c.b.output(c.b.activation("clip", c.b.conv("small", c.b.conv("three", x, 3, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, 14), 8,
                                                     {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 15),
                              clip));
    all.push_back(std::move(c));
  }
  {
    Case c{"3x3 13->24 relu + 2x2 max-pool (floor and ceil_mode)", {}, 37, 53, 2, 2};
    const TensorId x = c.b.input("x", 13);
    const PoolAttrs p = max_pool_2x2();
    const TensorId r = c.b.activation("relu", c.b.conv("conv", x, 24, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 21), relu());
    c.b.output(c.b.pool("pool", r, p, {0, 0, 0, 0}, false));
    const TensorId r2 = c.b.activation("relu2", c.b.conv("conv2", x, 8, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 22), relu());
    c.b.output(c.b.pool("pool_ceil", r2, p, {0, 0, 0, 0}, true));
    all.push_back(std::move(c));
  }
  {
    // The runtime gives every input the same extent, so the low-resolution tensor is made in the
    // graph (a max-pool of the first input); H and W even so that the upsample restores them.
    Case c{"nearest 2x upsample of 20 ch + concat 3 ch + 3x3 conv 23->16 relu; upsample + conv 20->32", {}, 38, 52, 2, 3};
    const TensorId x = c.b.input("x", 20);
    const TensorId skip = c.b.input("skip", 3);
    const PoolAttrs p = max_pool_2x2();
    const TensorId lo = c.b.pool("lo", x, p, {0, 0, 0, 0}, false);
    const std::vector<ValueId> big = {c.b.c(1), c.b.c(20), c.b.g.program.mul(c.b.shape(lo)[2], c.b.c(2)),
                                      c.b.g.program.mul(c.b.shape(lo)[3], c.b.c(2))};
    UpsampleAttrs up;
    const TensorId u = c.b.op("up", "Resize", up, {lo}, big);
    const TensorId cat = c.b.op("cat", "Concat", ConcatAttrs{1}, {u, skip}, {c.b.c(1), c.b.c(23), big[2], big[3]});
    c.b.output(c.b.activation("relu", c.b.conv("conv", cat, 16, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 31), relu()));
    const TensorId u2 = c.b.op("up2", "Resize", up, {lo}, big);
    c.b.output(c.b.conv("conv_up", u2, 32, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 32));
    c.upsampled = 2;
    all.push_back(std::move(c));
  }
  {
    // Zero Pads read through: one read by a conv and by a concat's second input (as OIDN's
    // pad-to-16 is), one with begin pads before a conv without padding; and a crop of two
    // Slices after the last conv. The Pads are never computed.
    Case c{"pad + conv 7->8 relu, concat with the pad + conv 15->5 relu + 2-Slice crop, pad(2,1) + valid conv 7->4", {}, 35, 41, 3, 3};
    GraphBuilder& b = c.b;
    const TensorId x = b.input("x", 7);
    const ValueId h = b.shape(x)[2], w = b.shape(x)[3];
    const ValueId h2 = b.add(h, b.c(2)), w2 = b.add(w, b.c(3));
    const TensorId px = b.op("pad_x", "Pad", zero_pad(b, {0, 0, 2, 3}), {x}, {b.c(1), b.c(7), h2, w2});
    const TensorId a = b.activation("relu_a", b.conv("conv_a", px, 8, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 41), relu());
    const TensorId cat = b.op("cat", "Concat", ConcatAttrs{1}, {a, px}, {b.c(1), b.c(15), h2, w2});
    const TensorId r = b.activation("relu_cat", b.conv("conv_cat", cat, 5, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 42), relu());
    b.crop_output(r, 5, 1, 2, h, w2, h, w);
    const TensorId pb = b.op("pad_begin", "Pad", zero_pad(b, {2, 1, 1, 3}), {x}, {b.c(1), b.c(7), b.add(h, b.c(3)), b.add(w, b.c(4))});
    b.output(b.conv("conv_valid", pb, 4, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, 43));
    all.push_back(std::move(c));
  }
  for (int64_t w : {46, 52}) {
    // Channel counts that are multiples of 8 between convs: the coop plans keep them NHWC
    // (the input 3 and the output 5 stay NCHW). conv_up reads an upsampled 24-channel NHWC tensor
    // concatenated with an 8-channel NHWC one (its second chunk straddles the two: channels
    // 16..23 of X0, 0..7 of X1); conv_out an NHWC 16-channel tensor concatenated with the NCHW
    // input. Width 46: the NCHW reads take the scalar path; 52: the vector one.
    Case c{"NHWC between convs: 3->16 (NCHW in), 16->8, 16->24 + pool, up + concat 24+8 -> 16, concat 16+3 -> 5 (NCHW out), width " +
               std::to_string(w),
           {}, 38, w, 5, 5};
    GraphBuilder& b = c.b;
    const TensorId x = b.input("x", 3);
    const PoolAttrs p = max_pool_2x2();
    const TensorId a = b.activation("relu_a", b.conv("conv_a", x, 16, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 51), relu());
    const TensorId e8 = b.activation("relu_e", b.conv("conv_e", a, 8, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 52), relu());
    const TensorId r24 = b.activation("relu_p", b.conv("conv_p", a, 24, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 53), relu());
    const TensorId pooled = b.pool("pool", r24, p, {0, 0, 0, 0}, false);
    // As above: the upsample's extents are twice the pooled ones (equal to the input's at even
    // sizes), so the lowering can check them.
    const ValueId h = b.g.program.mul(b.shape(pooled)[2], b.c(2)), wv = b.g.program.mul(b.shape(pooled)[3], b.c(2));
    UpsampleAttrs up;
    const TensorId u = b.op("up", "Resize", up, {pooled}, {b.c(1), b.c(24), h, wv});
    const TensorId cat = b.op("cat", "Concat", ConcatAttrs{1}, {u, e8}, {b.c(1), b.c(32), h, wv});
    const TensorId cu = b.activation("relu_up", b.conv("conv_up", cat, 16, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 54), relu());
    const TensorId cat2 = b.op("cat2", "Concat", ConcatAttrs{1}, {cu, x}, {b.c(1), b.c(19), h, wv});
    b.output(b.conv("conv_out", cat2, 5, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 55));
    c.upsampled = 1;
    c.nhwc = true;
    all.push_back(std::move(c));
  }
  for (int64_t w : {47, 44}) {
    // NARROW planes: 9 to 12 input channels as planes of 4-channel slots, one chunk each (the
    // last partial); a 3x3 conv and a 1x5 one without padding; and 6 channels as one chunk of
    // 8-channel one-pixel slots (NARROW=1). Two widths: 47 (the other NCHW staging paths scalar)
    // and 44 (theirs vector; the widths OIDN runs at).
    Case c{"narrow planes: 3x3 11->21 relu, 1x5 valid 9->7, 3x3 6->17, width " + std::to_string(w), {}, 33, w, 3, 3};
    const TensorId x = c.b.input("x", 11);
    c.b.output(c.b.activation("relu", c.b.conv("conv11", x, 21, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 81), relu()));
    const TensorId x9 = c.b.input("x9", 9);
    // (7 outputs: 35 taps x outputs, past conv2d_coopmat_tapsum's 32.)
    c.b.output(c.b.conv("conv9", x9, 7, {1, 5}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, 82));
    const TensorId x6 = c.b.input("x6", 6);
    c.b.output(c.b.conv("conv6", x6, 17, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 83));
    all.push_back(std::move(c));
  }
  {
    // One-phase up2 skips beyond one plane of 4-channel slots: a 9-channel NCHW graph input
    // (OIDN's color + albedo + normal, dec_conv1a's skip: 3 planes) and a 56-channel NHWC tensor
    // in row steps (SKIP_ROWS: four chunks, the last partial). Low resolution 17x22: partial
    // tiles in both directions; width 44: the NCHW vector path. (Channel counts that make every
    // conv compute-bound in the cost model, and graph inputs that cannot be NHWC, so that the
    // tensors between convs are NHWC.)
    Case c{"wide skips: 3->32 relu + pool, up + concat 9-ch input -> 21 relu, 9->56 relu, up + concat 56 ch -> 13", {}, 34, 44, 4, 4};
    GraphBuilder& b = c.b;
    const TensorId x = b.input("x", 3);
    const TensorId skip = b.input("skip", 9);
    const PoolAttrs p = max_pool_2x2();
    const TensorId a = b.activation("relu_lo", b.conv("conv_lo", x, 32, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 71), relu());
    const TensorId lo = b.pool("pool", a, p, {0, 0, 0, 0}, false);
    const ValueId h = b.g.program.mul(b.shape(lo)[2], b.c(2)), w = b.g.program.mul(b.shape(lo)[3], b.c(2));
    UpsampleAttrs up;
    const TensorId u = b.op("up", "Resize", up, {lo}, {b.c(1), b.c(32), h, w});
    const TensorId cat = b.op("cat", "Concat", ConcatAttrs{1}, {u, skip}, {b.c(1), b.c(41), h, w});
    b.output(b.activation("relu_9", b.conv("conv_skip9", cat, 21, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 72), relu()));
    const TensorId s56 = b.activation("relu_s", b.conv("conv_s", skip, 56, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 73), relu());
    const TensorId u2 = b.op("up2", "Resize", up, {lo}, {b.c(1), b.c(32), h, w});
    const TensorId cat2 = b.op("cat2", "Concat", ConcatAttrs{1}, {u2, s56}, {b.c(1), b.c(88), h, w});
    b.output(b.conv("conv_skip56", cat2, 13, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 74));
    c.upsampled = 2;
    c.nhwc = true;
    all.push_back(std::move(c));
  }
  {
    // Tap-sum candidates (conv2d_coopmat_tapsum: kh * kw * c_out <= 64): a 3-channel conv with a
    // zero Pad before it and a 2-Slice crop after it (OIDN's last conv), and a 2-channel one
    // without bias (odd width: the patch rows cross tile rows anywhere). The cost model keeps
    // these memory-bound tensors NCHW; the U-Net test of test_coop.cpp reads an NHWC one.
    Case c{"tap-sum: 3->16 relu (NHWC), pad + 3x3 16->3 + 2-Slice crop, 3x3 16->2 sigmoid (no bias)", {}, 33, 43, 3, 3};
    GraphBuilder& b = c.b;
    const TensorId x = b.input("x", 3);
    const ValueId h = b.shape(x)[2], w = b.shape(x)[3];
    const TensorId a = b.activation("relu_a", b.conv("conv_a", x, 16, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 71), relu());
    const PadAttrs pad = zero_pad(b, {0, 0, 3, 2});
    const TensorId pa = b.op("pad", "Pad", pad, {a}, {b.c(1), b.c(16), b.add(h, b.c(3)), b.add(w, b.c(2))});
    const TensorId o = b.conv("conv_out", pa, 3, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 72);
    b.crop_output(o, 3, 2, 1, b.add(h, b.c(1)), b.add(w, b.c(2)), b.add(h, b.c(1)), b.add(w, b.c(1)));
    b.output(b.activation("sig", b.conv("conv_two", a, 2, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, false, 73), sigmoid()));
    all.push_back(std::move(c));
  }
  {
    // Tails (conv2d_coopmat TAIL + conv_tail_ring): a conv whose activated output alone feeds a
    // 3x3 conv of few channels gets that conv in its epilogue. A 3-channel tail with a bias and
    // a 2-Slice crop (OIDN's last conv; 24 channels: a partial K fragment of the tail), and a
    // 2-channel one without bias, with its own activation, after a 1x1 conv (odd width, tile
    // borders and image borders in every position).
    Case c{"tails: 5->24 relu -> 3x3 24->3 + 2-Slice crop, 1x1 5->16 relu -> 3x3 16->2 sigmoid (no bias)", {}, 35, 47, 2, 4};
    GraphBuilder& b = c.b;
    const TensorId x = b.input("x", 5);
    const ValueId h = b.shape(x)[2], w = b.shape(x)[3];
    const TensorId a = b.activation("relu_a", b.conv("conv_a", x, 24, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 81), relu());
    const TensorId o = b.conv("conv_tail", a, 3, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 82);
    b.crop_output(o, 3, 3, 2, b.add(h, b.c(-4)), w, b.add(h, b.c(-4)), b.add(w, b.c(-5)));
    const TensorId e = b.activation("relu_e", b.conv("conv_e", x, 16, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, 83), relu());
    b.output(b.activation("sig", b.conv("conv_tail2", e, 2, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, false, 84), sigmoid()));
    c.tails = 2;
    all.push_back(std::move(c));
  }
  for (int64_t width : {45, 44}) {
    // Heads (conv2d_coopmat HEAD): a conv reading an image of at most 4 channels whose activated
    // output alone feeds the next conv runs in that conv's prologue. A 3-channel image through a
    // zero Pad (2 rows, 3 columns at the end) -> 3x3 3->24 relu -> 3x3 24->32 relu + 2x2 max-pool
    // (ceil_mode: odd padded height); a 4-channel one -> 3x3 4->16 (no bias, no activation) ->
    // 3x3 16->19 leaky (19 channels: a partial output tile). Width 45: patches cross the image
    // edges in every position; 44: rows of a multiple of 4 pixels, as OIDN's (the conv's own
    // staging takes its vector path).
    Case c{"heads: pad + 3x3 3->24 relu -> 3x3 24->32 relu + ceil pool, 3x3 4->16 -> 3x3 16->19 leaky, width " + std::to_string(width),
           {}, 35, width, 2, 4};
    GraphBuilder& b = c.b;
    const TensorId x = b.input("x", 3);
    const TensorId y = b.input("y", 4);
    const ValueId h = b.shape(x)[2], w = b.shape(x)[3];
    const PadAttrs pad = zero_pad(b, {0, 0, 2, 3});
    const TensorId px = b.op("pad", "Pad", pad, {x}, {b.c(1), b.c(3), b.add(h, b.c(2)), b.add(w, b.c(3))});
    const TensorId a = b.activation("relu_h", b.conv("head", px, 24, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 91), relu());
    const TensorId m = b.activation("relu_m", b.conv("main", a, 32, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 92), relu());
    const PoolAttrs p = max_pool_2x2();
    b.output(b.pool("pool", m, p, {0, 0, 0, 0}, true));
    ActivationAttrs leaky;
    leaky.kind = Activation::LeakyRelu;
    leaky.alpha = 0.2f;
    const TensorId e = b.conv("head2", y, 16, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, false, 93);
    b.output(b.activation("leaky", b.conv("main2", e, 19, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 94), leaky));
    c.heads = 2;
    all.push_back(std::move(c));
  }
  for (int64_t width : {37, 36}) {
    // A head of three chunks whose activation is not 0 at 0 (sigmoid: the padded channels hold
    // 0.5, which the conv's zero weights must cancel), read through a Pad with begin pads, and a
    // 2-Slice crop after the headed conv; at two widths as above.
    Case c{"head: pad(1,2) + 3x3 3->40 sigmoid -> 3x3 40->16 relu + 2-Slice crop, width " + std::to_string(width), {}, 29, width, 1, 2};
    GraphBuilder& b = c.b;
    const TensorId x = b.input("x", 3);
    const ValueId h = b.shape(x)[2], w = b.shape(x)[3];
    const PadAttrs pad = zero_pad(b, {1, 2, 0, 1});
    const ValueId ph = b.add(h, b.c(1)), pw = b.add(w, b.c(3));
    const TensorId px = b.op("pad", "Pad", pad, {x}, {b.c(1), b.c(3), ph, pw});
    const TensorId a = b.activation("sig_h", b.conv("head", px, 40, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 95), sigmoid());
    const TensorId m = b.activation("relu_m", b.conv("main", a, 16, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, 96), relu());
    b.crop_output(m, 16, 1, 2, h, pw, h, w);
    c.heads = 1;
    all.push_back(std::move(c));
  }
  return all;
}

}  // namespace denox::testing

#!/usr/bin/python3
"""Write OIDN U-Nets the way torch.onnx.export(..., dynamo=True) (torch >= 2.5) does, without it.

Debian 12 has torch 1.13, which only has the TorchScript exporter; the dynamo exporter builds its
graphs from torch.export programs through onnxscript's torchlib, and they look different:
opset 18+, SymInt arithmetic on 0-d int64 tensors (Shape(start,end) -> Squeeze, or Shape ->
Gather; Add/Sub/Mul/Div/Mod; Cast/Floor/Ceil for float maths), SymInt lists built as Concat of
Reshape(x, [-1]) pieces, Pad with an `axes` input, Slice per axis with INT64_MAX ends, Resize with
an empty roi and `scales` or `sizes`, model-local torchlib functions (unoptimized exports),
value_info with names like "s0". Each such form is a --variant here, so the importer is tested on
the family rather than on one graph. Weights and the expected output come from the same PyTorch
module as export_oidn_torch.py, so the numbers are PyTorch's.

Example:
  emulate_dynamo_oidn.py out/d.onnx --dynamic --variant pad=function,size=gather,up=sizes
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_oidn_torch as oidn  # noqa: E402  (the PyTorch module, weights and inputs)

INT64_MAX = 2**63 - 1
TORCHLIB = "pkg.onnxscript.torch_lib"
TORCHLIB_COMMON = "pkg.onnxscript.torch_lib.common"

# Each variant axis and its choices; the first is the default.
VARIANTS = {
    # How a SymInt size is read: torchlib's aten_sym_size, or an older Shape -> Gather.
    "size": ["shape_squeeze", "gather"],
    # The pad-to-16 formula a user writes in forward().
    "formula": ["mod", "ceil", "floordiv", "floordiv_float", "floordiv_where", "negmod", "max"],
    # How the SymInt list reaches Pad: trace-only torchlib (Concat in ONNX order), the old
    # onnxscript function (reorders the torch list with Slice step -2, in a model-local
    # function), or Pad-18 with an axes input.
    "pad": ["concat", "function", "function_default", "axes"],
    # How a 0-d SymInt becomes a 1-element list piece.
    "piece": ["reshape", "unsqueeze"],
    # Nearest 2x upsampling: constant scales, sizes from Shape * 2, or sizes of the skip tensor
    # (F.interpolate(x, size=skip.shape[2:])).
    "up": ["scales", "sizes", "skip_sizes", "scales_axes"],
    # The crop: x[:, :, :h, :w] (a Slice per axis, INT64_MAX on the untouched ones),
    # torch.narrow (end = start + length), one Slice over both axes, or an end computed as
    # the padded extent minus the pad.
    "crop": ["slice", "narrow", "joint", "minus_pad"],
    # Where conv weights come from.
    "weights": ["initializer", "constant", "identity"],
    # Wrap Relu/Conv in model-local functions (unoptimized dynamo output).
    "functions": ["no", "yes"],
    # MaxPool with its (unused) Indices output, as torchlib's `pool, _ = op.MaxPool(...)`.
    "maxpool": ["one_output", "indices"],
}


class Builder:
    """Collects nodes, initializers, value_info and functions of one graph."""

    def __init__(self, opset):
        self.opset = opset
        self.nodes, self.inits, self.value_info = [], [], []
        self.functions = {}
        self.count = 0

    def fresh(self, hint):
        self.count += 1
        return f"{hint}_{self.count}"

    def op(self, op_type, inputs, outputs=1, domain="", **attrs):
        outs = [self.fresh(op_type.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=self.fresh("node_" + op_type),
                                           domain=domain, **attrs))
        return outs[0] if outputs == 1 else outs

    def const(self, value, dtype=np.int64):
        """A Constant node holding a tensor (0-d for a Python scalar, 1-D for a list)."""
        t = numpy_helper.from_array(np.array(value, dtype=dtype), name="")
        return self.op("Constant", [], value=t)

    def const_ints(self, values):
        return self.op("Constant", [], value_ints=list(values))

    def init(self, array, hint):
        name = self.fresh(hint)
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name=name))
        return name

    def annotate(self, name, elem_type, dims):
        self.value_info.append(helper.make_tensor_value_info(name, elem_type, dims))


class Emitter:
    """Emits the U-Net's forward pass in one variant's dialect."""

    def __init__(self, b, v):
        self.b, self.v = b, v

    # ---- SymInt arithmetic (0-d int64 tensors) ---------------------------------------------

    def sym_size(self, x, axis):
        b = self.b
        if self.v["size"] == "gather":
            return b.op("Gather", [b.op("Shape", [x]), b.const(axis)], axis=0)
        return b.op("Squeeze", [b.op("Shape", [x], start=axis, end=axis + 1), b.const_ints([0])])

    def floordiv(self, a, c):
        b, style = self.b, self.v["formula"]
        if style == "floordiv_float":
            # An older torchlib: cast to float, divide, floor, cast back.
            q = b.op("Floor", [b.op("Div", [b.op("Cast", [a], to=TensorProto.FLOAT),
                                             b.op("Cast", [b.const(c)], to=TensorProto.FLOAT)])])
            return b.op("Cast", [q], to=TensorProto.INT64)
        if style == "floordiv_where":
            # Python floor division from truncating Div: subtract one where the signs differ
            # and the division is inexact.
            cc = b.const(c)
            q = b.op("Div", [a, cc])
            inexact = b.op("Not", [b.op("Equal", [b.op("Mul", [q, cc]), a])])
            signs = b.op("Xor", [b.op("Less", [a, b.const(0)]), b.op("Less", [cc, b.const(0)])])
            return b.op("Where", [b.op("And", [inexact, signs]), b.op("Sub", [q, b.const(1)]), q])
        return b.op("Div", [a, b.const(c)])

    def pad_amount(self, n):
        """The pad that brings extent n up to a multiple of 16, as a user would write it."""
        b, f = self.b, self.v["formula"]
        if f == "mod":  # (16 - n % 16) % 16
            return b.op("Mod", [b.op("Sub", [b.const(16), b.op("Mod", [n, b.const(16)])]), b.const(16)])
        if f == "negmod":  # sympy's form: Mod(-n, 16)
            return b.op("Mod", [b.op("Neg", [n]), b.const(16)])
        if f == "ceil":  # math.ceil(n / 16) * 16 - n
            ratio = b.op("Div", [b.op("Cast", [n], to=TensorProto.FLOAT), b.op("Cast", [b.const(16)], to=TensorProto.FLOAT)])
            up = b.op("Cast", [b.op("Ceil", [ratio])], to=TensorProto.INT64)
            return b.op("Sub", [b.op("Mul", [up, b.const(16)]), n])
        # ((n + 15) // 16) * 16 - n, optionally clamped with max(., 0)
        padded = b.op("Mul", [self.floordiv(b.op("Add", [n, b.const(15)]), 16), b.const(16)])
        amount = b.op("Sub", [padded, n])
        if f == "max":
            amount = b.op("Max", [amount, b.const(0)])
        return amount

    def piece(self, s):
        """A 0-d SymInt as a 1-element int64 list piece."""
        b = self.b
        if self.v["piece"] == "unsqueeze":
            return b.op("Unsqueeze", [s, b.const_ints([0])])
        return b.op("Reshape", [s, b.const([-1])])

    # ---- pad / crop ------------------------------------------------------------------------

    def pad(self, x, ph, pw):
        b, style = self.b, self.v["pad"]
        zero = b.const([0])
        if style == "axes":
            pads = b.op("Concat", [zero, zero, self.piece(ph), self.piece(pw)], axis=0)
            return b.op("Pad", [x, pads, b.const(0.0, np.float32), b.const_ints([2, 3])], mode="constant")
        if style == "concat":
            pads = b.op("Concat", [zero, zero, zero, zero, zero, zero, self.piece(ph), self.piece(pw)], axis=0)
            return b.op("Pad", [x, pads, b.const(0.0, np.float32)], mode="constant")
        # torch's order (last axis first, begin/end pairs), reordered inside a function
        torch_pads = b.op("Concat", [zero, self.piece(pw), zero, self.piece(ph)], axis=0)
        define_constant_pad_nd(b)
        attrs = {} if style == "function_default" else {"value": 0.0}
        return b.op("aten_constant_pad_nd", [x, torch_pads], domain=TORCHLIB, **attrs)

    def crop(self, y, h, w, ph, pw):
        b, style = self.b, self.v["crop"]
        zero, one = b.const([0]), b.const([1])
        if style == "joint":
            ends = b.op("Concat", [self.piece(h), self.piece(w)], axis=0)
            return b.op("Slice", [y, b.const([0, 0]), ends, b.const([2, 3]), b.const([1, 1])])
        for axis in (0, 1):  # x[:, :, ...] slices the untouched axes to INT64_MAX
            y = b.op("Slice", [y, zero, b.const([INT64_MAX]), b.const([axis]), one])
        for axis, n, p in ((2, h, ph), (3, w, pw)):
            if style == "narrow":
                end = b.op("Add", [b.const(0), n])
            elif style == "minus_pad":
                end = b.op("Sub", [self.sym_size(y, axis), p])
            else:
                end = b.op("Cast", [n], to=TensorProto.INT64)
            y = b.op("Slice", [y, zero, self.piece(end), b.const([axis]), one])
        return y

    # ---- layers ----------------------------------------------------------------------------

    def conv(self, x, conv, relu=True):
        b = self.b
        w = conv.weight.detach().numpy()
        bias = conv.bias.detach().numpy()
        style = self.v["weights"]
        if style == "constant":
            wn = b.op("Constant", [], value=numpy_helper.from_array(w, name=""))
            bn = b.op("Constant", [], value=numpy_helper.from_array(bias, name=""))
        else:
            wn, bn = b.init(w, "weight"), b.init(bias, "bias")
            if style == "identity":
                wn, bn = b.op("Identity", [wn]), b.op("Identity", [bn])
        attrs = dict(strides=[1, 1], pads=[1, 1, 1, 1], dilations=[1, 1], group=1)
        if self.v["functions"] == "yes":
            define_function(b, "aten_conv2d", ["input", "weight", "bias"],
                            [helper.make_node("Conv", ["input", "weight", "bias"], ["out"], **attrs)])
            y = b.op("aten_conv2d", [x, wn, bn], domain=TORCHLIB)
        else:
            y = b.op("Conv", [x, wn, bn], **attrs)
        if not relu:
            return y
        if self.v["functions"] == "yes":
            define_function(b, "aten_relu", ["self"], [helper.make_node("Relu", ["self"], ["out"])])
            return b.op("aten_relu", [y], domain=TORCHLIB)
        return b.op("Relu", [y])

    def pool(self, x):
        attrs = dict(kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 0, 0], dilations=[1, 1], ceil_mode=0)
        if self.v["maxpool"] == "indices":
            return self.b.op("MaxPool", [x], outputs=2, **attrs)[0]
        return self.b.op("MaxPool", [x], **attrs)

    def up(self, x, skip):
        b, style = self.b, self.v["up"]
        attrs = dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")
        if style == "scales":
            return b.op("Resize", [x, "", b.const([1.0, 1.0, 2.0, 2.0], np.float32)], **attrs)
        if style == "scales_axes":  # Resize-18 with axes, and the defaults spelled out
            return b.op("Resize", [x, "", b.const([2.0, 2.0], np.float32)], axes=[2, 3], antialias=0,
                        keep_aspect_ratio_policy="stretch", cubic_coeff_a=-0.75, exclude_outside=0, **attrs)
        if style == "skip_sizes":
            sizes = b.op("Shape", [skip], start=2, end=4)
        else:
            sizes = b.op("Concat", [self.piece(b.op("Mul", [self.sym_size(x, a), b.const(2)])) for a in (2, 3)], axis=0)
        sizes = b.op("Concat", [b.op("Shape", [x], start=0, end=2), b.op("Cast", [sizes], to=TensorProto.INT64)], axis=0)
        return b.op("Resize", [x, "", "", sizes], **attrs)

    def forward(self, m, x, dynamic, height, width):
        b = self.b
        if dynamic:
            h, w = self.sym_size(x, 2), self.sym_size(x, 3)
            ph, pw = self.pad_amount(h), self.pad_amount(w)
        else:
            # torch.export specializes static sizes: the pads are plain Python ints.
            h, w = b.const(height), b.const(width)
            ph, pw = b.const((16 - height % 16) % 16), b.const((16 - width % 16) % 16)
        x0 = self.pad(x, ph, pw)
        if dynamic:
            # value_info as the exporter writes sympy expressions: names that are not input
            # symbols and must not become ones.
            b.annotate(x0, TensorProto.FLOAT, [1, None, "16*((s0 + 15)//16)", "s1 + Mod(-s1, 16)"])
            b.annotate(h, TensorProto.INT64, [])
        t = self.conv(x0, m.enc_conv0)
        t = self.conv(t, m.enc_conv1)
        pool1 = t = self.pool(t)
        t = self.conv(t, m.enc_conv2)
        pool2 = t = self.pool(t)
        t = self.conv(t, m.enc_conv3)
        pool3 = t = self.pool(t)
        t = self.conv(t, m.enc_conv4)
        t = self.pool(t)
        t = self.conv(t, m.enc_conv5a)
        t = self.conv(t, m.enc_conv5b)
        for skip, ca, cb in ((pool3, m.dec_conv4a, m.dec_conv4b), (pool2, m.dec_conv3a, m.dec_conv3b),
                             (pool1, m.dec_conv2a, m.dec_conv2b), (x0, m.dec_conv1a, m.dec_conv1b)):
            t = b.op("Concat", [self.up(t, skip), skip], axis=1)
            t = self.conv(self.conv(t, ca), cb)
        t = self.conv(t, m.dec_conv0, relu=False)
        return self.crop(t, h, w, ph, pw)


def define_function(b, name, inputs, body, domain=TORCHLIB, attributes=(), defaults=()):
    """A model-local function (as onnxscript emits them). `defaults` are AttributeProtos written
    as FunctionProto.attribute_proto (field 11, IR 9), which onnx 1.12's python lacks: appended
    as raw protobuf, so the file is what a newer onnx writes."""
    if (domain, name) in b.functions:
        return
    fn = helper.make_function(domain, name, inputs, [body[-1].output[0]], body,
                              [helper.make_opsetid("", b.opset), helper.make_opsetid(TORCHLIB_COMMON, 1)],
                              list(attributes))
    raw = fn.SerializeToString()
    for attr in defaults:
        payload = attr.SerializeToString()
        raw += bytes([11 << 3 | 2]) + encode_varint(len(payload)) + payload
    fn = onnx.FunctionProto()
    fn.ParseFromString(raw)
    b.functions[(domain, name)] = fn


def encode_varint(n):
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def define_constant_pad_nd(b):
    """torchlib's onnxscript (not trace-only) constant_pad_nd: reorders torch's pad list
    [last_begin, last_end, ...] into ONNX's [begins..., ends...] with Slice step -2. Rank is a
    function of the common domain. `value` is a float attribute, referenced by the body."""
    define_function(b, "Rank", ["input"], [
        helper.make_node("Shape", ["input"], ["shape"]),
        helper.make_node("Size", ["shape"], ["rank"]),
    ], domain=TORCHLIB_COMMON)
    value_ref = helper.make_attribute("value_float", 0.0)
    value_ref.ref_attr_name = "value"
    n = helper.make_node
    body = [
        n("Constant", [], ["neg_1"], value_ints=[-1]),
        n("Rank", ["self"], ["rank"], domain=TORCHLIB_COMMON),
        n("Constant", [], ["two"], value_int=2),
        n("Mul", ["rank", "two"], ["rank2"]),
        n("Size", ["pad"], ["npad"]),
        n("Sub", ["rank2", "npad"], ["zero_count0"]),
        n("Reshape", ["zero_count0", "neg_1"], ["zero_count"]),
        n("Constant", [], ["zero"], value_ints=[0]),
        n("Expand", ["zero", "zero_count"], ["zeros"]),
        n("Concat", ["pad", "zeros"], ["torch_paddings"], axis=0),
        n("Size", ["torch_paddings"], ["size_d"]),
        n("Constant", [], ["steps"], value_ints=[-2]),
        n("Sub", ["steps", "size_d"], ["ends_odd"]),
        n("Slice", ["torch_paddings", "steps", "ends_odd", "zero", "steps"], ["odd"]),
        n("Sub", ["neg_1", "size_d"], ["ends_even"]),
        n("Slice", ["torch_paddings", "neg_1", "ends_even", "zero", "steps"], ["even"]),
        n("Concat", ["odd", "even"], ["onnx_padding"], axis=0),
        n("Constant", [], ["value_const"]),
        n("CastLike", ["value_const", "self"], ["value_cast"]),
        n("Pad", ["self", "onnx_padding", "value_cast"], ["out"]),
    ]
    body[-3].attribute.append(value_ref)
    default = helper.make_attribute("value", 0.0)
    define_function(b, "aten_constant_pad_nd", ["self", "pad"], body, attributes=["value"], defaults=[default])


def build(args, variant, module):
    b = Builder(args.opset)
    dims = [1, args.in_channels, "s0", "s1"] if args.dynamic else [1, args.in_channels, args.height, args.width]
    out = Emitter(b, variant).forward(module, "x", args.dynamic, args.height, args.width)
    b.nodes.append(helper.make_node("Identity", [out], ["output"], name="node_output"))
    out_dims = [1, 3, "s0", "s1"] if args.dynamic else [1, 3, args.height, args.width]
    graph = helper.make_graph(b.nodes, "main_graph",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, out_dims)],
                              initializer=b.inits, value_info=b.value_info)
    opsets = [helper.make_opsetid("", args.opset)]
    if b.functions:
        opsets += [helper.make_opsetid(TORCHLIB, 1), helper.make_opsetid(TORCHLIB_COMMON, 1)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="pytorch", producer_version="2.5.0")
    model.ir_version = 10 if args.opset >= 21 else 8
    model.functions.extend(b.functions.values())
    return model


def parse_variant(text):
    chosen = {k: v[0] for k, v in VARIANTS.items()}
    for item in filter(None, (text or "").split(",")):
        key, _, value = item.partition("=")
        if key not in VARIANTS or value not in VARIANTS[key]:
            sys.exit(f"unknown variant '{item}'; choose from {VARIANTS}")
        chosen[key] = value
    return chosen


def main():
    p = oidn.model_arguments(__doc__, 18, "symbolic H and W ('s0', 's1')", "every initializer in '<output>.data'")
    p.add_argument("--variant", default="", help="comma-separated key=value, keys: " + ", ".join(VARIANTS))
    args = oidn.parse_model_arguments(p)
    variant = parse_variant(args.variant)

    import torch
    torch.manual_seed(args.seed)
    module = oidn.OidnUNet(args.size, args.in_channels, pad_to_16=True).eval()
    oidn.seed_weights(module, args.seed)
    x = oidn.make_input(args.in_channels, args.height, args.width, args.seed + 1)
    with torch.no_grad():
        y = module(torch.from_numpy(x)).numpy().astype(np.float32)

    model = build(args, variant, module)
    stem = args.output[:-5] if args.output.endswith(".onnx") else args.output
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    if args.external_data:
        # The dynamo exporter moves every initializer out, small int64 ones included.
        location = os.path.basename(args.output) + ".data"
        data_path = os.path.join(os.path.dirname(args.output) or ".", location)
        if os.path.exists(data_path):
            os.remove(data_path)  # onnx appends to an existing file
        onnx.save_model(model, args.output, save_as_external_data=True, all_tensors_to_one_file=True,
                        location=location, size_threshold=0)
    else:
        onnx.save_model(model, args.output)
    np.save(stem + ".input.npy", x)
    np.save(stem + ".output.npy", y)
    oidn.write_extra_sizes(module, args.in_channels, args.also, args.seed, stem)
    print(f"wrote {args.output} (opset {args.opset}, {'dynamic' if args.dynamic else 'static'}, "
          f"{','.join(f'{k}={v}' for k, v in variant.items())})")


if __name__ == "__main__":
    main()

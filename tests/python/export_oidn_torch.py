#!/usr/bin/python3
"""Export OIDN's U-Net from PyTorch to ONNX, plus a test input and PyTorch's fp32 output.

This produces the models denox must import "in the wild": whatever torch.onnx.export (the
TorchScript exporter) emits, including the shape subgraph that pads H and W up to a multiple of
16 and the Slice that crops the result. The architecture follows OIDN's training/model.py; the
channel counts are the ones in docs/DESIGN.md ("The OIDN U-Net").

Needs only Debian packages, no network: python3-torch, python3-numpy, and python3-onnx for
--external-data and the checker (run with /usr/bin/python3 if a pyenv/venv python shadows it).

Example:
  export_oidn_torch.py out/unet.onnx --size balanced --in-channels 3 --dynamic --opset 17
writes out/unet.onnx, out/unet.input.npy (1x3x37x53) and out/unet.output.npy (1x3x37x53).
"""

import argparse
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# Output channels of every conv, in forward order (see docs/DESIGN.md).
CHANNELS = {
    "balanced": {
        "enc": [32, 32, 48, 64, 80, 96, 96],
        "dec": [112, 112, 96, 96, 64, 64, 64, 32],
    },
    "small": {
        "enc": [32, 32, 32, 32, 32, 32, 32],
        "dec": [64, 64, 64, 64, 64, 32, 32, 32],
    },
}
OUT_CHANNELS = 3


def conv(cin, cout):
    return nn.Conv2d(cin, cout, kernel_size=3, padding=1, bias=True)


class OidnUNet(nn.Module):
    def __init__(self, size, in_channels, pad_to_16=True):
        super().__init__()
        e = CHANNELS[size]["enc"]
        d = CHANNELS[size]["dec"]
        ic = in_channels
        self.pad_to_16 = pad_to_16
        self.enc_conv0 = conv(ic, e[0])
        self.enc_conv1 = conv(e[0], e[1])
        self.enc_conv2 = conv(e[1], e[2])
        self.enc_conv3 = conv(e[2], e[3])
        self.enc_conv4 = conv(e[3], e[4])
        self.enc_conv5a = conv(e[4], e[5])
        self.enc_conv5b = conv(e[5], e[6])
        # Decoder convs read concat(upsampled, skip): the skip comes second, as in OIDN.
        self.dec_conv4a = conv(e[6] + e[3], d[0])
        self.dec_conv4b = conv(d[0], d[1])
        self.dec_conv3a = conv(d[1] + e[2], d[2])
        self.dec_conv3b = conv(d[2], d[3])
        self.dec_conv2a = conv(d[3] + e[1], d[4])
        self.dec_conv2b = conv(d[4], d[5])
        self.dec_conv1a = conv(d[5] + ic, d[6])
        self.dec_conv1b = conv(d[6], d[7])
        self.dec_conv0 = conv(d[7], OUT_CHANNELS)

    def forward(self, input):
        if self.pad_to_16:
            # What OIDN does for arbitrary resolutions: pad bottom/right to a multiple of 16 (four
            # 2x2 pools) and crop the output back. The exporter turns this into a shape subgraph.
            h, w = input.shape[2:]
            ph = (16 - h % 16) % 16
            pw = (16 - w % 16) % 16
            x0 = F.pad(input, (0, pw, 0, ph))
        else:
            x0 = input
        relu = F.relu
        pool = lambda t: F.max_pool2d(t, 2, 2)
        up = lambda t: F.interpolate(t, scale_factor=2.0, mode="nearest")

        x = relu(self.enc_conv0(x0))
        x = relu(self.enc_conv1(x))
        x = pool1 = pool(x)
        x = relu(self.enc_conv2(x))
        x = pool2 = pool(x)
        x = relu(self.enc_conv3(x))
        x = pool3 = pool(x)
        x = relu(self.enc_conv4(x))
        x = pool(x)
        x = relu(self.enc_conv5a(x))
        x = relu(self.enc_conv5b(x))
        x = torch.cat((up(x), pool3), 1)
        x = relu(self.dec_conv4a(x))
        x = relu(self.dec_conv4b(x))
        x = torch.cat((up(x), pool2), 1)
        x = relu(self.dec_conv3a(x))
        x = relu(self.dec_conv3b(x))
        x = torch.cat((up(x), pool1), 1)
        x = relu(self.dec_conv2a(x))
        x = relu(self.dec_conv2b(x))
        x = torch.cat((up(x), x0), 1)
        x = relu(self.dec_conv1a(x))
        x = relu(self.dec_conv1b(x))
        x = self.dec_conv0(x)
        if self.pad_to_16:
            x = x[:, :, :h, :w]
        return x


def seed_weights(model, seed):
    """He-uniform weights (activations stay O(1) through 16 ReLU convs; PyTorch's default init
    shrinks them ~6x per layer, leaving an output dominated by biases) and small non-zero biases,
    so that a wrong weight layout or a dropped bias is visible in the output."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Conv2d):
                fan_in = m.weight.shape[1] * m.weight.shape[2] * m.weight.shape[3]
                bound = (6.0 / fan_in) ** 0.5
                m.weight.copy_((torch.rand(m.weight.shape, generator=gen) * 2 - 1) * bound)
                m.bias.copy_((torch.rand(m.bias.shape, generator=gen) * 2 - 1) * 0.1)


def make_input(in_channels, height, width, seed):
    """Color/albedo in [0.05, 1), normals in (-1, 1): non-zero everywhere and image-like."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.05, 1.0, size=(1, in_channels, height, width)).astype(np.float32)
    if in_channels == 9:
        x[:, 6:9] = rng.uniform(-1.0, 1.0, size=(1, 3, height, width)).astype(np.float32)
    return x


def parse_size(text):
    """'37x53' -> (37, 53): height x width, as in the file names it produces."""
    try:
        h, w = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not HEIGHTxWIDTH")
    if h <= 0 or w <= 0:
        raise argparse.ArgumentTypeError(f"'{text}' has a non-positive extent")
    return h, w


def write_extra_sizes(model, in_channels, sizes, seed, stem):
    """For a dynamic model: PyTorch's output at more sizes, as <stem>.<H>x<W>.input.npy and
    .output.npy, so one exported model is checked at several resolutions. Each size gets its own
    input seed, so no two sizes share data."""
    for k, (h, w) in enumerate(sizes):
        x = make_input(in_channels, h, w, seed + 11 + k)
        with torch.no_grad():
            y = model(torch.from_numpy(x))
        assert y.shape == (1, OUT_CHANNELS, h, w), y.shape
        np.save(f"{stem}.{h}x{w}.input.npy", x)
        np.save(f"{stem}.{h}x{w}.output.npy", y.numpy().astype(np.float32))


def save_external(model_bytes, path):
    """Re-save the exported model with every initializer over 1 KiB in one '<model>.data' file.
    torch 1.13's exporter only writes external data for models over 2 GiB, so use python3-onnx."""
    try:
        import onnx
    except ImportError:
        sys.exit("--external-data needs the python3-onnx package (apt-get install python3-onnx)")
    model = onnx.load_model_from_string(model_bytes)
    location = os.path.basename(path) + ".data"
    data_path = os.path.join(os.path.dirname(path) or ".", location)
    if os.path.exists(data_path):
        os.remove(data_path)  # onnx appends to an existing data file
    onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location=location, size_threshold=1024)


def model_arguments(description, opset, dynamic_help, external_help):
    """The options both exporters share (this one and emulate_dynamo_oidn.py)."""
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("output", help="path of the .onnx file to write")
    p.add_argument("--size", choices=["balanced", "small"], default="balanced")
    p.add_argument("--in-channels", type=int, choices=[3, 6, 9], default=3)
    p.add_argument("--opset", type=int, default=opset)
    p.add_argument("--dynamic", action="store_true", help=dynamic_help)
    p.add_argument("--external-data", action="store_true", help=external_help)
    p.add_argument("--height", type=int, default=37)
    p.add_argument("--width", type=int, default=53)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--also", type=parse_size, action="append", default=[], metavar="HxW",
                   help="with --dynamic: also write <stem>.HxW.input.npy/.output.npy (repeatable)")
    return p


def parse_model_arguments(p):
    args = p.parse_args()
    if args.also and not args.dynamic:
        p.error("--also needs --dynamic (a static model runs at its exported size only)")
    return args


def main():
    p = model_arguments(__doc__, 17, "dynamic H and W (dynamic_axes)", "weights in '<output>.data'")
    p.add_argument("--no-pad", action="store_true",
                   help="no pad-to-16/crop in forward (H and W must then be multiples of 16)")
    p.add_argument("--input-npy", help="default: <output without .onnx>.input.npy")
    p.add_argument("--output-npy", help="default: <output without .onnx>.output.npy")
    p.add_argument("--no-check", action="store_true", help="skip onnx.checker / shape inference")
    args = parse_model_arguments(p)
    if args.no_pad and any(h % 16 or w % 16 for h, w in [(args.height, args.width)] + args.also):
        p.error("--no-pad needs sizes that are multiples of 16")
    stem = args.output[:-5] if args.output.endswith(".onnx") else args.output
    input_npy = args.input_npy or stem + ".input.npy"
    output_npy = args.output_npy or stem + ".output.npy"
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)

    started = time.time()
    torch.manual_seed(args.seed)
    model = OidnUNet(args.size, args.in_channels, pad_to_16=not args.no_pad).eval()
    seed_weights(model, args.seed)
    x = torch.from_numpy(make_input(args.in_channels, args.height, args.width, args.seed + 1))
    with torch.no_grad():
        y = model(x)
    assert y.shape == (1, OUT_CHANNELS, args.height, args.width), y.shape

    import io
    buffer = io.BytesIO()
    dynamic_axes = {"input": {2: "H", 3: "W"}, "output": {2: "H", 3: "W"}} if args.dynamic else None
    # With dynamic H/W the traced size does not matter: trace a small input, so that large
    # --height/--width only pay for one forward pass (tracing runs the model once more).
    example = x
    if args.dynamic:
        example = torch.from_numpy(make_input(args.in_channels, 21, 35, args.seed + 2))
        if args.no_pad:
            example = torch.from_numpy(make_input(args.in_channels, 32, 48, args.seed + 2))
    with torch.no_grad():
        torch.onnx.export(model, (example,), buffer, opset_version=args.opset, input_names=["input"],
                          output_names=["output"], dynamic_axes=dynamic_axes, do_constant_folding=True)
    model_bytes = buffer.getvalue()
    if args.external_data:
        save_external(model_bytes, args.output)
    else:
        with open(args.output, "wb") as f:
            f.write(model_bytes)
    np.save(input_npy, x.numpy())
    np.save(output_npy, y.numpy().astype(np.float32))
    write_extra_sizes(model, args.in_channels, args.also, args.seed, stem)

    if not args.no_check:
        try:
            import onnx
            onnx.checker.check_model(args.output)  # a path: follows external data
            inferred = onnx.shape_inference.infer_shapes(onnx.load(args.output))
            out_dims = [d.dim_param or d.dim_value
                        for d in inferred.graph.output[0].type.tensor_type.shape.dim]
            print(f"checked: output dims {out_dims}")
        except ImportError:
            print("python3-onnx not installed: skipped the checker")
    print(f"wrote {args.output}, {input_npy}, {output_npy} in {time.time() - started:.1f} s "
          f"(output mean {y.mean().item():.4f}, std {y.std().item():.4f})")


if __name__ == "__main__":
    main()

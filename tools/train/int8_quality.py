#!/usr/bin/env python3
"""What int8 convolutions would cost the trained denoiser in quality: PSNR on held-out renders
with every convolution's inputs and weights fake-quantized to 8 bits, beside fp32 and fp16.

  int8_quality.py --weights models/oidn_pathtracer_balanced.onnx|weights.npz \\
                  --data HELD_OUT_DIR --calib CALIBRATION_DIR [--device cuda]

The simulation is what an int8 conv kernel (bench/int8_probe/) computes: weights per output
channel, symmetric, 8 bits; each conv input per tensor with a scale calibrated on other renders,
the two sources of a concat (upsampled features, skip) apart, as a kernel with one reduction loop
per source and its own scale would read them. A tensor read by two convs (a pooled encoder
output: the next encoder conv's input and a decoder conv's skip; the network input: enc_conv0's
and dec_conv1a's) is stored once in int8, so it has one scale. Everything between (ReLU, pool,
upsample) maps quantized values to quantized values, so quantizing conv inputs covers int8
activations stored between layers. Arithmetic stays fp32: int32 accumulation of 8-bit products
is exact.

Variants: activations signed (127 steps for non-negative features) or unsigned (255); scales
from the calibration maximum, or "p99.99": the largest over the calibration images of each
image's 99.99th percentile of |x| (on a random sample of 4M values); enc_conv0 (whose input is
the image, also dec_conv1a's skip) and the last conv kept in floating point (fp32 here) or not.
Convolutions run in true fp32 (TF32 off). PSNR as everywhere in tools/train (display values,
per image, averaged); "vs fp32" is the PSNR of a variant's output against the fp32 network's.

Weights: an ONNX file (needs the onnx module) or an .npz of its initializers (made where onnx is,
e.g. `python3 tools/train/int8_quality.py --weights models/X.onnx --save-npz X.npz`).
"""

import argparse
import os
import sys

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data import Dataset  # noqa: E402
from model import Denoiser, psnr  # noqa: E402


def load_weights(path):
    if path.endswith(".npz"):
        return {k: torch.from_numpy(v) for k, v in np.load(path).items()}
    import onnx
    from onnx import numpy_helper

    return {i.name: torch.from_numpy(numpy_helper.to_array(i).copy()) for i in onnx.load(path).graph.initializer}


def make_model(arch, weights, device):
    model = Denoiser(arch, 9)
    model.load_state_dict(weights)
    return model.to(device).eval()


def conv_parts(unet):
    """[(name, conv, [channel counts of its input's sources])]: a decoder conv after an upsample
    reads concat(upsampled features, skip); the features have the previous conv's channels."""
    convs = [(n, m) for n, m in unet.named_children() if isinstance(m, nn.Conv2d)]
    out = []
    for i, (name, conv) in enumerate(convs):
        prev = convs[i - 1][1].out_channels if i else conv.in_channels
        parts = [prev, conv.in_channels - prev] if conv.in_channels > prev else [conv.in_channels]
        out.append((name, conv, parts))
    return out


# A decoder conv's skip source is the tensor some encoder conv reads whole (OIDN's U-Net):
# (conv, source) -> the (conv, 0) whose statistics and precision it shares.
SHARED_TENSORS = {("dec_conv4a", 1): ("enc_conv4", 0), ("dec_conv3a", 1): ("enc_conv3", 0),
                  ("dec_conv2a", 1): ("enc_conv2", 0), ("dec_conv1a", 1): ("enc_conv0", 0)}


def fake_quant(x, scale, signed):
    lo, hi = (-127, 127) if signed else (0, 255)
    return torch.clamp(torch.round(x / scale), lo, hi) * scale


class Int8Sim:
    """Forward pre-hooks on the U-Net's convs: record input ranges (calibrate) or fake-quantize."""

    def __init__(self, unet):
        self.parts = conv_parts(unet)
        self.stats = {}  # (conv, part) -> [max |x|, 99.99th percentile of |x|, any negative]
        self.mode = None  # None: pass through; "calib"; or a variant dict
        self.handles = [conv.register_forward_pre_hook(self._hook(name, parts)) for name, conv, parts in self.parts]

    def remove(self):
        for h in self.handles:
            h.remove()
        self.handles = []

    def _hook(self, name, parts):
        def hook(_module, args):
            if self.mode is None:
                return None
            x = args[0]
            pieces = list(torch.split(x, parts, dim=1))
            for k, p in enumerate(pieces):
                key = SHARED_TENSORS.get((name, k), (name, k))
                if self.mode == "calib":
                    a = p.abs().flatten().float()
                    sample = a[torch.randint(a.numel(), (min(a.numel(), 1 << 22),), device=a.device)]
                    s = self.stats.setdefault(key, [0.0, 0.0, False])
                    s[0] = max(s[0], a.max().item())
                    s[1] = max(s[1], torch.quantile(sample, 0.9999).item())
                    s[2] = s[2] or bool((p < 0).any())
                    continue
                v = self.mode
                if key[0] in v["float_convs"]:  # the tensor's own conv runs in float: it is not int8
                    continue
                amax, p9999, negative = self.stats[key]
                signed = negative or v["signed"]
                ref = amax if v["calib"] == "max" else p9999
                pieces[k] = fake_quant(p, max(ref, 1e-8) / (127 if signed else 255), signed)
            return None if self.mode == "calib" else (torch.cat(pieces, 1),)

        return hook


def quantize_weights(unet, float_convs):
    for name, conv, _ in conv_parts(unet):
        if name in float_convs:
            continue
        w = conv.weight.data
        s = w.abs().amax(dim=(1, 2, 3), keepdim=True).clamp(min=1e-12) / 127
        conv.weight.data = torch.round(w / s) * s


@torch.no_grad()
def outputs(model, data, device, half=False):
    """{(entry, spp): denoised radiance}"""
    out = {}
    for i, inputs in enumerate(data.inputs):
        for spp, x in inputs.items():
            x = x.float().unsqueeze(0).to(device)
            out[(i, spp)] = model(x.half()).float() if half else model(x)
    return out


def table(data, outs, ref_outs):
    rows = {}
    for (i, spp), y in outs.items():
        r = rows.setdefault(spp, [0.0, 0.0, 0])
        r[0] += psnr(y, data.refs[i].float().unsqueeze(0).to(y.device))
        r[1] += psnr(y, ref_outs[(i, spp)])
        r[2] += 1
    return {spp: (a / n, b / n) for spp, (a, b, n) in sorted(rows.items())}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--weights", required=True, help="the model's ONNX file, or an .npz of its initializers")
    p.add_argument("--data", help="held-out data set (denox_pathtracer --dataset)")
    p.add_argument("--calib", help="calibration data set (other scenes than --data)")
    p.add_argument("--save-npz", help="only write the initializers to this .npz and exit")
    p.add_argument("--arch", default="balanced")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = p.parse_args()
    weights = load_weights(args.weights)
    if args.save_npz:
        np.savez(args.save_npz, **{k: v.numpy() for k, v in weights.items()})
        print(f"wrote {len(weights)} arrays to {args.save_npz}")
        return
    if not args.data or not args.calib:
        p.error("--data and --calib are needed (or --save-npz)")
    dev = args.device
    torch.backends.cudnn.allow_tf32 = False  # fp32 means fp32 (PyTorch's default on CUDA is TF32)
    torch.backends.cuda.matmul.allow_tf32 = False
    model = make_model(args.arch, weights, dev)
    data, calib = Dataset(args.data), Dataset(args.calib)
    print(f"held-out: {args.data}, {len(data)} scenes, spp {data.spp}; calibration: {args.calib}, {len(calib)} scenes")

    fp32 = outputs(model, data, dev)
    results = [("fp32", table(data, fp32, fp32))]
    if dev != "cpu":  # PyTorch has no fp16 convolutions on the CPU
        half = make_model(args.arch, weights, dev).half()
        results.append(("fp16", table(data, outputs(half, data, dev, half=True), fp32)))

    sim = Int8Sim(model.unet)
    sim.mode = "calib"
    outputs(model, calib, dev)
    sim.remove()
    print("calibrated conv input ranges (max |x|, 99.99th percentile):")
    for (name, k), (amax, p9999, neg) in sorted(sim.stats.items()):
        print(f"  {name:11s} part {k}: {amax:9.4f} {p9999:9.4f}{'  signed' if neg else ''}")
    variants = [
        ("int8, signed activations, max", dict(signed=True, calib="max", float_convs=())),
        ("int8, unsigned activations, max", dict(signed=False, calib="max", float_convs=())),
        ("int8, unsigned, p99.99", dict(signed=False, calib="p9999", float_convs=())),
        ("int8, unsigned, p99.99, enc_conv0 float", dict(signed=False, calib="p9999", float_convs=("enc_conv0",))),
        ("int8, unsigned, p99.99, enc_conv0 and last conv float", dict(signed=False, calib="p9999", float_convs=("enc_conv0", "dec_conv0"))),
    ]
    for label, v in variants:
        qmodel = make_model(args.arch, weights, dev)
        quantize_weights(qmodel.unet, v["float_convs"])  # on the device: the same rounding
        qsim = Int8Sim(qmodel.unet)
        qsim.stats, qsim.mode = sim.stats, v
        results.append((label, table(data, outputs(qmodel, data, dev), fp32)))

    spps = list(results[0][1])
    print("\nPSNR (dB, display values) against the reference, and against the fp32 network's output:")
    print(f"{'variant':56s}" + "".join(f"{f'{s} spp':>9s}{'vs fp32':>9s}" for s in spps))
    for label, t in results:
        print(f"{label:56s}" + "".join(f"{t[s][0]:9.2f}{t[s][1]:9.2f}" for s in spps))


if __name__ == "__main__":
    main()

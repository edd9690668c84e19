"""The denoiser that tools/train trains and exports: OIDN's U-Net (the class denox's own export
tests use, tests/python/export_oidn_torch.py) wrapped in an HDR transfer function.

The network works on tonemapped values, as OIDN's does: colour x becomes x / (1 + x) (Reinhard)
before the U-Net, and the output y becomes y / (1 - y) after it. Unlike OIDN, which applies its
transfer outside the network, both directions are part of the exported graph, built only from ops
denox runs (Mul, Add, Div, Sub, Clip): the renderer binds raw radiance, albedo and normal and
gets radiance back, with nothing to do on its side.

The display curve (Reinhard, then gamma 1/2.2) is the one of examples/pathtracer (tonemap.comp,
image_io.cpp), so PSNR here and there measure the same thing.
"""

import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "python"))
from export_oidn_torch import OidnUNet  # noqa: E402  (the architecture denox's tests cover)

# The largest value the network may output in the transfer's space: radiance up to ~1000.
MAX_ENCODED = 0.999


def display(x):
    """Radiance to display values in [0, 1): Reinhard then gamma 1/2.2 (tonemap.comp)."""
    x = x.clamp(min=0)
    return (x / (1 + x)) ** (1 / 2.2)


def psnr(a, b):
    """PSNR in dB of the display values of two radiance images (peak 1)."""
    mse = torch.mean((display(a.float()) - display(b.float())) ** 2).item()
    return float("inf") if mse == 0 else -10.0 * torch.log10(torch.tensor(mse)).item()


class Denoiser(nn.Module):
    """Radiance (+ albedo + normal) in, radiance out; the U-Net runs on Reinhard values."""

    def __init__(self, arch="balanced", in_channels=9):
        super().__init__()
        self.unet = OidnUNet(arch, in_channels, pad_to_16=True)
        mask = torch.zeros(1, in_channels, 1, 1)
        mask[:, :3] = 1  # only the colour channels are HDR; albedo and normal pass unchanged
        self.register_buffer("mask", mask)
        self.arch = arch
        self.in_channels = in_channels
        init_weights(self.unet)

    def encode(self, x):
        """x / (1 + x) on the colour channels, identity elsewhere (x * 0 + 1 = 1)."""
        return x / (1 + x * self.mask)

    def forward_encoded(self, x_encoded):
        """The U-Net alone: what training optimizes (loss in the transfer's space)."""
        return self.unet(x_encoded)

    def forward(self, x):
        y = self.unet(self.encode(x)).clamp(0.0, MAX_ENCODED)
        return y / (1 - y)


def encode_color(c):
    """The transfer of the colour channels alone (targets)."""
    return c / (1 + c)


def init_weights(unet):
    """He-normal weights and zero biases: PyTorch's default init shrinks activations through 16
    ReLU convolutions, which slows the start of training."""
    for m in unet.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
            nn.init.zeros_(m.bias)
    nn.init.normal_(unet.dec_conv0.weight, std=1e-3)  # start near "output 0", not a wild guess


def save_checkpoint(model, path, extra=None):
    torch.save({"arch": model.arch, "in_channels": model.in_channels, "state": model.state_dict(), **(extra or {})}, path)


def load_checkpoint(path, device="cpu"):
    ck = torch.load(path, map_location=device)
    model = Denoiser(ck["arch"], ck["in_channels"])
    model.load_state_dict(ck["state"])
    return model.to(device).eval(), ck


def export_onnx(model, path, opset=17):
    """torch.onnx.export with dynamic H and W. The TorchScript exporter (dynamo=False) writes the
    forms denox's tests cover most; where it no longer exists the dynamo exporter is used."""
    import inspect

    model = model.float().cpu().eval()
    example = torch.rand(1, model.in_channels, 37, 53)  # odd size: the pad-to-16 path is traced
    kwargs = dict(opset_version=opset, input_names=["input"], output_names=["output"],
                  dynamic_axes={"input": {2: "H", 3: "W"}, "output": {2: "H", 3: "W"}}, do_constant_folding=True)
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        try:
            with torch.no_grad():
                torch.onnx.export(model, (example,), path, dynamo=False, **kwargs)
            return "torchscript"
        except Exception as e:  # noqa: BLE001  (a torch without the legacy exporter)
            print(f"TorchScript exporter failed ({e}); using the dynamo exporter")
            with torch.no_grad():
                torch.onnx.export(model, (example,), path, dynamo=True, **kwargs)
            return "dynamo"
    with torch.no_grad():
        torch.onnx.export(model, (example,), path, **kwargs)
    return "torchscript"

"""The data set denox_pathtracer writes (--dataset DIR --count N):

  DIR/NNNNN_sppS.npy   float32 H x W x 9: colour (radiance, mean of S samples), albedo, normal
  DIR/NNNNN_ref.npy    float32 H x W x 3: the reference (many samples)
  DIR/index.txt        one line per entry: the scene it shows

Entries are loaded once into (optionally GPU) memory as float16 CHW tensors; training draws
random crops from them.
"""

import glob
import os
import re

import numpy as np
import torch

_SPP = re.compile(r"^(\d+)_spp(\d+)\.npy$")


def scan(root):
    """{entry stem: sorted list of spp} for entries that have a reference."""
    entries = {}
    for path in glob.glob(os.path.join(root, "*_spp*.npy")):
        m = _SPP.match(os.path.basename(path))
        if m and os.path.exists(os.path.join(root, m.group(1) + "_ref.npy")):
            entries.setdefault(m.group(1), []).append(int(m.group(2)))
    if not entries:
        raise SystemExit(f"{root}: no NNNNN_sppS.npy with NNNNN_ref.npy (render one with denox_pathtracer --dataset)")
    return {k: sorted(v) for k, v in sorted(entries.items())}


def _chw(path, channels):
    a = np.load(path)
    if a.ndim != 3 or a.shape[2] != channels:
        raise SystemExit(f"{path}: expected H x W x {channels}, found {a.shape}")
    if not np.isfinite(a).all():
        raise SystemExit(f"{path}: non-finite values")
    return torch.from_numpy(np.ascontiguousarray(a.transpose(2, 0, 1)))


class Dataset:
    """All entries of one folder: inputs[i][spp] (9 x H x W) and refs[i] (3 x H x W)."""

    def __init__(self, root, device="cpu", spp=None, limit=None):
        self.root = root
        self.names, self.inputs, self.refs = [], [], []
        for stem, spps in list(scan(root).items())[:limit]:
            use = [s for s in spps if spp is None or s in spp]
            if not use:
                continue
            self.names.append(stem)
            self.inputs.append({s: _chw(os.path.join(root, f"{stem}_spp{s}.npy"), 9).half().to(device) for s in use})
            self.refs.append(_chw(os.path.join(root, f"{stem}_ref.npy"), 3).half().to(device))
        if not self.names:
            raise SystemExit(f"{root}: no entries with spp {spp}")
        self.spp = sorted({s for d in self.inputs for s in d})

    def __len__(self):
        return len(self.names)

    def random_batch(self, batch, crop, gen, device):
        """`batch` random crops (input 9 x crop x crop, reference 3 x crop x crop), float32,
        each from a random entry and spp, flipped and transposed at random. Flips leave the
        normal vectors as they are: a mirrored world is as plausible to the network."""
        xs, ys = [], []
        for _ in range(batch):
            i = int(torch.randint(len(self), (1,), generator=gen))
            spps = list(self.inputs[i])
            x_full = self.inputs[i][spps[int(torch.randint(len(spps), (1,), generator=gen))]]
            _, h, w = x_full.shape
            c = min(crop, h, w)
            y0 = int(torch.randint(h - c + 1, (1,), generator=gen))
            x0 = int(torch.randint(w - c + 1, (1,), generator=gen))
            x = x_full[:, y0:y0 + c, x0:x0 + c]
            y = self.refs[i][:, y0:y0 + c, x0:x0 + c]
            k = int(torch.randint(8, (1,), generator=gen))
            if k & 1:
                x, y = x.flip(2), y.flip(2)
            if k & 2:
                x, y = x.flip(1), y.flip(1)
            if k & 4:
                x, y = x.transpose(1, 2), y.transpose(1, 2)
            xs.append(x)
            ys.append(y)
        return torch.stack(xs).to(device).float(), torch.stack(ys).to(device).float()

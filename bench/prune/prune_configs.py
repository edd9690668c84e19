#!/usr/bin/env python3
"""Chooses conv2d_coopmat's (or, with --family conv2d_coopmat_up2 / conv2d_coopmat_tapsum, that family's) reduced configuration set
(pipeline step 5, "prune") from measured data, and writes it as src/kernels/coop_configs_pruned.inc.

Input: the measurement store of an exhaustive tuning run (`denox compile --exhaustive`, or
bench/tune_gpu.sh, which copies it to $OUT): an SQLite cache file whose `measurements` table
holds one row per (device, layer signature, configuration) with "ok <ms>" or "failed <why>".

The objective (the paper's subset selection): pick at most K templates S minimizing
    sum over layers L of  w(L) * min_{t in S} ms(L, t) / min_{t in all} ms(L, t)
i.e. the summed slowdown of each layer against its exhaustive optimum when the tuner may only
try S, each layer weighted by its optimum's time (--objective time, the default: the summed layer
time, what a frame pays) or by 1 (--objective slowdown: the mean per-layer slowdown, which lets a
20% loss on a 10 us conv outweigh 2% on a 0.2 ms one). A layer none of S covers costs
`--uncovered` (the heuristic's choice is always tried as well, so this is a bound, not a
failure). Greedy: add the template that lowers the objective most until K are chosen; greedy is
within (1 - 1/e) of the optimum for this monotone submodular objective, and K is small enough to
check by hand.

Usage: prune_configs.py CACHE.sqlite3 [CACHE2.sqlite3 ...] [-k 8] [--family F] [--objective time|slowdown]
                        [--out src/kernels/coop_configs_pruned.inc]
(conv2d_coopmat_up2's set goes to src/kernels/coop_up2_configs_pruned.inc, conv2d_coopmat_tapsum's to
src/kernels/coop_tapsum_configs_pruned.inc)
"""
import argparse
import re
import sqlite3
import sys


def template_of(config, c_out):
    # "4x64 nt64 ck16 sg8x1 16x16x16 f16acc[ bglobal][ up2][ 1ph][ ep2][ tapsum][ adirect][ nhwc(x0,y)]" -> "4x64/ntfull/sg8x1/n16/b0"
    # ("/ck32" appended for ck32, "/p1" for one phase per workgroup, "/e2" for its two-pass
    # epilogue, "/ts" for tap-sum, whose N is
    # always the layer's taps x channels: "full", "/ad" for A_DIRECT); the layouts are part of the
    # layer, not of the template
    m = re.match(r"(\d+)x(\d+) nt(\d+) ck(\d+) sg(\d+)x(\d+) 16x(\d+)x16 \w+( bglobal)?( up2)?( 1ph)?( ep\d)?( tapsum)?( adirect)?( nhwc\([^)]*\))?$",
                 config)
    if not m:
        return None
    th, tw, nt, ck, sgm, sgn, cmn, bg, _, one_phase, ep, tap_sum, a_direct, _ = m.groups()
    full = 8 if c_out <= 8 else (c_out + 15) // 16 * 16
    nt_s = "full" if int(nt) == full or tap_sum else nt
    ck_s = "" if ck == "16" else f"/ck{ck}"  # ck32: the A_DIRECT and tap-sum templates' "/ck32"
    return f"{th}x{tw}/nt{nt_s}/sg{sgm}x{sgn}/n{cmn}/b{1 if bg else 0}{ck_s}{'/p1' if one_phase else ''}{'/e' + ep.strip()[2:] if ep else ''}{'/ts' if tap_sum else ''}{'/ad' if a_direct else ''}"


def load(path, family):
    """{layer key: {template: ms}} from the rows of `family` in the store."""
    db = sqlite3.connect(path)
    layers = {}
    for key_text, result in db.execute("SELECT key_text, result FROM measurements"):
        result = bytes(result).decode()
        parts = key_text.split("|")
        try:
            i = parts.index(family)
        except ValueError:
            continue
        pattern, config, ops = parts[i + 1], parts[i + 2], "|".join(parts[i + 3:])
        w = re.search(r"Conv\([^)]*\)\[[^,]*,c(\d+)x", ops)
        if not w:
            continue
        t = template_of(config.replace(" emulate", ""), int(w.group(1)))
        if t is None or not result.startswith("ok "):
            continue
        nhwc = re.search(r" nhwc\([^)]*\)", config)
        layer = "|".join(parts[:i]) + "|" + pattern + "|" + ops
        layers.setdefault(layer, {}).setdefault(nhwc.group(0) if nhwc else "", {})[t] = float(result[3:])
    # A layer measured in NHWC is chosen for in NHWC: its NCHW variant is measured with the
    # heuristic's configuration only (src/kernels/implementations.cpp), which says nothing about
    # the others.
    return {layer + layout: ts for layer, by_layout in layers.items() for layout, ts in by_layout.items()
            if layout or len(by_layout) == 1}


def objective(layers, s, uncovered, weigh_time):
    """The objective of the template set `s`: each layer's best time with `s` over its optimum
    (`uncovered` where `s` has none of its templates), summed, each weighted by the optimum's ms
    (weigh_time: the summed layer time, which is what a frame pays, where a 1% loss on a 0.9 ms
    conv outweighs 20% on a 0.01 ms one) or by 1 (the summed slowdown)."""
    total = 0.0
    for ts in layers.values():
        best = min(ts.values())
        got = [ts[t] for t in s if t in ts]
        total += (best if weigh_time else 1.0) * ((min(got) / best) if got else uncovered)
    return total


def greedy(layers, k, uncovered, weigh_time=False):
    templates = sorted({t for ts in layers.values() for t in ts})
    chosen = []
    norm = sum(min(ts.values()) for ts in layers.values()) if weigh_time else len(layers)
    while len(chosen) < k:
        cand = min((t for t in templates if t not in chosen), key=lambda t: objective(layers, chosen + [t], uncovered, weigh_time),
                   default=None)
        if cand is None:
            break
        chosen.append(cand)
        total = objective(layers, chosen, uncovered, weigh_time)
        print(f"  + {cand:28s} objective {total:8.3f} over {len(layers)} layers "
              f"({'summed time / the optimum' if weigh_time else 'mean slowdown'} {total / norm:.4f})", file=sys.stderr)
    return chosen


def evaluate(path, family, ids, uncovered):
    """Prints how far the templates `ids` leave one store's layers from their optimum (a layer
    none of them covers counts `uncovered` times its optimum, as in greedy())."""
    layers = load(path, family)
    if not layers:
        print(f"{path}: no {family} measurements")
        return
    best = sum(min(ts.values()) for ts in layers.values())
    got = objective(layers, ids, uncovered, weigh_time=True)
    print(f"{path}: {len(layers)} {family} layers, summed time {got:.4f} ms against the per-layer optimum's "
          f"{best:.4f} ({100 * (got / best - 1):.2f}% over)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cache", nargs="+",
                    help="measurement stores (several: e.g. one per GPU). A layer's key holds the device and the build "
                         "(version and shader hash), so stores of two GPUs or two builds count as different layers; "
                         "a layer in two stores of one GPU and build keeps the first store's times")
    ap.add_argument("-k", type=int, default=8)
    ap.add_argument("--uncovered", type=float, default=3.0)
    ap.add_argument("--family", default="conv2d_coopmat", choices=["conv2d_coopmat", "conv2d_coopmat_up2", "conv2d_coopmat_tapsum"])
    ap.add_argument("--objective", default="time", choices=["time", "slowdown"],
                    help="minimize the summed layer time (default) or the mean per-layer slowdown")
    ap.add_argument("--out", default=None)
    ap.add_argument("--evaluate", nargs="+", metavar="LIST.inc",
                    help="choose nothing: report, store by store, how far the ids these files name are from the optimum")
    a = ap.parse_args()
    if a.evaluate:
        ids = [i for f in a.evaluate for i in re.findall(r'^"([^"]+)",', open(f).read(), re.M)]
        for path in a.cache:
            evaluate(path, a.family, ids, a.uncovered)
        return
    layers = {}
    for path in a.cache:
        for layer, ts in load(path, a.family).items():
            layers.setdefault(layer, ts)
    if not layers:
        sys.exit(f"{' '.join(a.cache)}: no {a.family} measurements (run an exhaustive tune first)")
    chosen = greedy(layers, a.k, a.uncovered, a.objective == "time")
    text = ("// Generated by bench/prune/prune_configs.py; do not edit by hand (bench/prune/README.md).\n"
            f"// From {len(layers)} measured {a.family} layers (exhaustive), k = {a.k}, greedy, objective {a.objective}.\n"
            + "".join(f'"{t}",\n' for t in chosen))
    if a.out:
        open(a.out, "w").write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Tests of prune_configs.py (CTest: bench.prune_configs) on small synthetic measurement stores:
the store format it parses, the two objectives, several stores, and --evaluate. The tool writes
src/kernels/*_pruned.inc, which every tuned compile reads, so a silent change in what it
chooses would show only as slower tuned plans on the GPU machine."""
import os
import sqlite3
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "prune_configs.py")
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import prune_configs  # noqa: E402


def device(n):
    return f"measure/1|denox-device-key/1\nvendor_id=0x000010de\ndevice_id=0x0000{n:04x}\n|0.2.5+shaders.test|1920x1088|edge/1|fp16"


def ops(c_in, c_out, h):
    return (f"Conv(k3x3 s1x1 d1x1 p1,1,1,1 bias)[1x{c_in}x{h}x{h},c{c_out}x{c_in}x3x3,c{c_out},->1x{c_out}x{h}x{h}]"
            f"Relu(0 0.01 -3.4e+38 3.4e+38)[1x{c_out}x{h}x{h},->1x{c_out}x{h}x{h}]")


# Three templates, every one "full" in N on both layers (nt = the layer's output channels).
def config(tile, c_out, extra=""):
    th_tw, sg = {"A": ("8x16", "4x1"), "B": ("16x16", "8x1"), "C": ("8x32", "8x1")}[tile]
    return f"{th_tw} nt{c_out} ck16 sg{sg} 16x16x16 f16acc{extra}"


TEMPLATE = {"A": "8x16/ntfull/sg4x1/n16/b0", "B": "16x16/ntfull/sg8x1/n16/b0", "C": "8x32/ntfull/sg8x1/n16/b0"}

# A big layer (64 out) where B wins and a small one (32 out) where B is twice as slow as A:
# weighted by time, B is the one template to keep; weighing every layer alike, C.
BIG = {"A": 0.50, "B": 0.40, "C": 0.45}
SMALL = {"A": 0.010, "B": 0.020, "C": 0.011}


def write_store(path, dev, layers, family="conv2d_coopmat", extra_rows=()):
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE measurements (key_digest TEXT PRIMARY KEY, key_text TEXT, result BLOB, checksum TEXT, created_at INTEGER)")
    rows = list(extra_rows)
    for (c_in, c_out, h), times in layers:
        for tile, ms in times.items():
            rows.append((f"{device(dev)}|{family}|conv+act|{config(tile, c_out)}|{ops(c_in, c_out, h)}", f"ok {ms:.6f}"))
    for i, (key, result) in enumerate(rows):
        db.execute("INSERT INTO measurements VALUES (?,?,?,?,?)", (f"{path}:{i}", key, result.encode(), "", 0))
    db.commit()
    db.close()


def run(*args):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True)


def ids_of(text):
    return [line.strip().strip('",') for line in text.splitlines() if line.startswith('"')]


class PruneConfigsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.store = os.path.join(self.dir.name, "a.sqlite3")
        bad = [(f"{device(1)}|conv2d_coopmat|conv+act|{config('C', 64)}|{ops(32, 64, 99)}", "failed shader did not compile"),
               (f"{device(1)}|conv2d_coopmat|conv+act|not a config|{ops(32, 64, 99)}", "ok 0.001")]
        write_store(self.store, 1, [((32, 64, 68), BIG), ((16, 32, 136), SMALL)], extra_rows=bad)

    def tearDown(self):
        self.dir.cleanup()

    def test_template_ids(self):
        self.assertEqual(prune_configs.template_of(config("B", 64), 64), TEMPLATE["B"])
        self.assertEqual(prune_configs.template_of("16x16 nt32 ck16 sg8x1 16x16x16 f16acc", 64), "16x16/nt32/sg8x1/n16/b0")
        self.assertEqual(prune_configs.template_of("16x16 nt64 ck32 sg4x1 16x16x16 f16acc up2 1ph ep2 adirect nhwc(x0,y)", 64),
                         "16x16/ntfull/sg4x1/n16/b0/ck32/p1/e2/ad")
        self.assertIsNone(prune_configs.template_of("not a config", 64))
        # Tap-sum: N is always the layer's taps x channels, so "full" whatever nt reads.
        self.assertEqual(prune_configs.template_of("8x32 nt32 ck16 sg8x1 16x8x16 f16acc tapsum", 3), "8x32/ntfull/sg8x1/n8/b0/ts")

    def test_load_skips_failures_and_unparsed_configs(self):
        layers = prune_configs.load(self.store, "conv2d_coopmat")
        # Two layers; the failed row and the unparsed config (a third shape) add nothing.
        self.assertEqual(len(layers), 2)
        self.assertEqual(sorted(min(ts.values()) for ts in layers.values()), [0.010, 0.40])

    def test_load_keeps_the_nhwc_variant_and_emulated_rows(self):
        # One layer measured in NHWC with every template and in NCHW with the heuristic's only:
        # the NCHW times say nothing about the other templates, so only the NHWC variant counts.
        # An emulated measurement (tests' " emulate" configs) names its template without it.
        store = os.path.join(self.dir.name, "layouts.sqlite3")
        key = lambda cfg: f"{device(3)}|conv2d_coopmat|conv+act|{cfg}|{ops(32, 64, 68)}"
        rows = [(key(config(t, 64, " nhwc(x0,y)")), f"ok {ms}") for t, ms in BIG.items()]
        rows += [(key(config("C", 64)), "ok 0.001"), (key(config("A", 32, " emulate")).replace(ops(32, 64, 68), ops(16, 32, 9)), "ok 0.5")]
        write_store(store, 3, [], extra_rows=rows)
        layers = prune_configs.load(store, "conv2d_coopmat")
        self.assertEqual(len(layers), 2)
        nhwc = [ts for layer, ts in layers.items() if layer.endswith(" nhwc(x0,y)")]
        self.assertEqual(nhwc, [{TEMPLATE[t]: ms for t, ms in BIG.items()}])
        self.assertIn({TEMPLATE["A"]: 0.5}, layers.values())

    def test_objectives_choose_differently(self):
        by_time = run(self.store, "-k", "1")
        self.assertEqual(by_time.returncode, 0, by_time.stderr)
        self.assertEqual(ids_of(by_time.stdout), [TEMPLATE["B"]])
        self.assertIn("objective time", by_time.stdout)
        by_slowdown = run(self.store, "-k", "1", "--objective", "slowdown")
        self.assertEqual(ids_of(by_slowdown.stdout), [TEMPLATE["C"]])
        # k = 2 by time adds A, which wins the small layer.
        self.assertEqual(ids_of(run(self.store, "-k", "2").stdout), [TEMPLATE["B"], TEMPLATE["A"]])

    def test_out_file(self):
        out = os.path.join(self.dir.name, "list.inc")
        self.assertEqual(run(self.store, "-k", "2", "--out", out).returncode, 0)
        with open(out) as f:
            text = f.read()
        self.assertTrue(text.startswith("// Generated by bench/prune/prune_configs.py"))
        self.assertEqual(ids_of(text), [TEMPLATE["B"], TEMPLATE["A"]])

    def test_several_stores(self):
        # Another GPU where A wins the big layer: its layers count on their own, and k = 1 by
        # time now keeps A (0.81 ms over the three layers; B 1.02, C 1.07).
        other = os.path.join(self.dir.name, "b.sqlite3")
        write_store(other, 2, [((32, 64, 68), {"A": 0.30, "B": 0.60, "C": 0.61})])
        self.assertEqual(len(prune_configs.load(other, "conv2d_coopmat")), 1)
        self.assertEqual(ids_of(run(self.store, other, "-k", "1").stdout), [TEMPLATE["A"]])
        # The same device and build in a second store: the first store's times are kept.
        again = os.path.join(self.dir.name, "c.sqlite3")
        write_store(again, 1, [((32, 64, 68), {"A": 0.01, "B": 0.90, "C": 0.90})])
        self.assertEqual(ids_of(run(self.store, again, "-k", "1").stdout), [TEMPLATE["B"]])

    def test_evaluate(self):
        lst = os.path.join(self.dir.name, "list.inc")
        with open(lst, "w") as f:
            f.write('// a list\n"%s",\n' % TEMPLATE["A"])
        r = run(self.store, "--evaluate", lst)
        self.assertEqual(r.returncode, 0, r.stderr)
        # A: 0.50 + 0.010 against the optimum 0.40 + 0.010.
        self.assertIn("2 conv2d_coopmat layers, summed time 0.5100 ms against the per-layer optimum's 0.4100 (24.39% over)", r.stdout)
        # A store without the family's layers is reported, not a crash.
        up2 = run(self.store, "--family", "conv2d_coopmat_up2", "--evaluate", lst)
        self.assertEqual(up2.returncode, 0, up2.stderr)
        self.assertIn("no conv2d_coopmat_up2 measurements", up2.stdout)
        # An uncovered layer counts --uncovered times its optimum.
        with open(lst, "w") as f:
            f.write('"%s",\n' % "4x64/ntfull/sg8x1/n16/b0")
        self.assertIn("summed time 1.2300 ms", run(self.store, "--evaluate", lst).stdout)
        self.assertIn("summed time 0.8200 ms", run(self.store, "--evaluate", lst, "--uncovered", "2").stdout)

    def test_no_measurements_is_an_error(self):
        r = run(self.store, "--family", "conv2d_coopmat_up2")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no conv2d_coopmat_up2 measurements", r.stderr)


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/python3
"""A configuration that crashes the process while it is measured (issue 5) is not tried again
forever: real `denox compile` processes are made to abort (std::abort, through the test hook
DENOX_TEST_CRASH_MEASURING=<phase>:<edge>) in the middle of measuring one edge, and the next
processes on the same cache are checked (src/runtime/measure/crash_journal.hpp):

- a crash while timing the edge (a serial step: only it was in flight) leaves a marker naming
  the dead process; one death is not blamed on the edge (the process may have been quit or
  killed): the next run measures it alone again, under "retry" markers. If that run dies there
  too (the hook, still set), the run after it records the edge as "failed crashed the process
  while being measured (time)", logs it, and never measures it again; if it does not (a quit,
  then a normal run), the edge is measured and used;
- a crash while compiling shaders on several threads leaves markers the next run cannot blame
  on one edge: it compiles, creates and times those edges one at a time (the hook, still set,
  now fires in the serial compile), and the run after that records the edge as failed;
- a crash while creating driver pipelines on several threads: the next run, without the hook,
  retries the edges alone and measures them all.

What "the schedule avoids the edge" means depends on the device: where a step has several
configurations (coop GPUs), the next compile succeeds without it; on lavapipe (CI) every kept
structure has one implementation, so the tuned schedule is refused with an error naming the op
and the crash (the cost model's plan is still there: `denox compile --no-measure`).

  cli_measure_crash_test.py DENOX_BINARY WORK_DIR [PRECISION]

PRECISION is fp32 (CTest, lavapipe) or fp16 (on a GPU with cooperative matrices: several coop
configurations per step, so the crashed one is avoided).
"""
import json
import os
import re
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys

HOOK = "DENOX_TEST_CRASH_MEASURING"


def check(cond, what):
    if not cond:
        sys.exit(f"FAILED: {what}")


def no_core_dump():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


class Run:
    precision = "fp32"

    def __init__(self, denox, model, cache, hook=None):
        env = {k: v for k, v in os.environ.items() if k != HOOK}
        if hook:
            env[HOOK] = hook
        args = [denox, "compile", model, "--size", "37x29", "--cache", cache, "--precision", Run.precision, "--json", "--quiet",
                "--validation"]
        p = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=no_core_dump)
        self.stdout, stderr = p.communicate(timeout=600)
        self.pid, self.rc = p.pid, p.returncode
        self.stderr = re.sub(r"\x1b\[[0-9;]*m", "", stderr)
        self.what = f"{' '.join(args)} ({hook or 'no hook'}): rc {self.rc}\n{self.stderr[-3000:]}"
        errors = [l for l in self.stderr.splitlines() if "vulkan validation:" in l and "error" in l.split("vulkan validation:")[0]]
        check(not errors, f"validation errors: {errors}\n{self.what}")

    def report(self):
        check(self.rc == 0, f"the compile succeeds: {self.what}")
        return json.loads(self.stdout)

    def crashed_at(self, phase, mode, target):
        check(self.rc == -signal.SIGABRT, f"the process aborted: {self.what}")
        check(f"aborting in {phase} ({mode}) of {target}\n" in self.stderr, f"it aborted in {phase} ({mode}) of {target}: {self.what}")


def rows(cache):
    db = sqlite3.connect(cache)
    try:
        return [bytes(r[0]).decode() for r in db.execute("SELECT result FROM measurements")]  # a blob
    finally:
        db.close()


def markers(cache):
    out = []
    for text in rows(cache):
        if text.startswith("running "):
            out.append(dict(f.split("=", 1) for f in text.split()[1:]))
    return out


def whats(report):
    return [f"{s['name']} [{s['family']} {s['config']}]" for s in report["schedule"]]


def main():
    denox, work = sys.argv[1], sys.argv[2]
    # Every compile's check of its tuned plan against the heuristic one (src/api/api_plan_check.hpp)
    # is forced to keep the heuristic plan where that one is a candidate: after a crash the
    # heuristic plan, which holds the crashed edge here, must never be (the checks below would
    # see the edge scheduled again).
    os.environ["DENOX_TEST_PLAN_CHECK"] = "heuristic"
    Run.precision = sys.argv[3] if len(sys.argv) > 3 else "fp32"
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    model = f"{work}/small.onnx"
    p = subprocess.run([denox, "make-model", model, "--arch", "small", "--pad-crop", "--seed", "3"], capture_output=True, text=True)
    check(p.returncode == 0, f"make-model: {p.stderr}")

    # The schedule on an undisturbed cache: the crashes below hit one of its steps (a plain conv,
    # no prologue, so no other edge's description contains its own).
    base = Run(denox, model, f"{work}/base.sqlite3").report()
    check(base["failed_edges"] == 0 and base["measured_edges"] == base["edges"] > 0, f"baseline: {base}")
    plain = [w for w in whats(base) if w.startswith("/enc_conv") and not any(x in w for x in ("Pad", "Concat", "Resize", "Slice", "->"))]
    check(len(plain) >= 3, f"plain convs in {whats(base)}")
    target = plain[len(plain) // 2]
    # Alternatives to fall back on: more kept implementations than structures (coop configs).
    alternatives = base["edges"] > base["structures_kept"]
    print(f"target edge: {target}; {'alternatives' if alternatives else 'no alternatives (one implementation per structure)'}")

    def avoided(run, phase):
        """The run after the crash was concluded: the edge failed with the crash, and was not used."""
        failure = f"crashed the process while being measured ({phase})"
        check(rows(cache).count("failed " + failure) == 1, f"one edge recorded as '{failure}': {rows(cache)}")
        check(not markers(cache) and "unmeasured" not in rows(cache), f"no markers left: {rows(cache)}")
        check(run.rc == 0, f"the compile succeeds: {run.what}")
        r = run.report()
        check(r["failed_edges"] == 1, f"one failed edge: {r}")
        check(target not in whats(r), f"the schedule avoids {target}: {whats(r)}")
        op = target.split("+")[0].split(" [")[0]  # the conv the edge is anchored at
        check(any(s["name"].split("+")[0] == op or ("+" + op) in s["name"] for s in r["schedule"]), f"{op} is still scheduled: {whats(r)}")
        if alternatives:
            check(target.split(" [")[0] in [s["name"] for s in r["schedule"]], f"another configuration of the step: {whats(r)}")
        else:
            # The only implementation of its structure failed: the structures pruning dropped
            # (the conv without its fusion, a dispatch more) come back.
            check(r["dispatches"] > base["dispatches"], f"a dispatch more than {base['dispatches']}: {r}")

    # 1. A crash while timing the edge, twice: measured alone again after the first, failed after
    #    the second, never measured again.
    cache = f"{work}/serial.sqlite3"
    first = Run(denox, model, cache, f"time:{target}")
    first.crashed_at("time", "serial", target)
    left = markers(cache)
    check(len(left) == 1 and left[0]["pid"] == str(first.pid) and left[0]["phase"] == "time" and left[0]["mode"] == "serial",
          f"the dead process's marker is left: {rows(cache)}")
    check(any(r.startswith("ok ") for r in rows(cache)), f"edges timed before the crash are stored: {rows(cache)}")
    second = Run(denox, model, cache, f"time:{target}")
    check(f"process {first.pid} died" in second.stderr and f"while {target} was measured alone (time); measuring it again alone"
          in second.stderr, f"one death is not blamed: {second.what}")
    second.crashed_at("time", "serial", target)
    mine = [m for m in markers(cache) if m["pid"] == str(second.pid)]
    check(len(mine) == 1 and mine[0]["phase"] == "time" and mine[0]["mode"] == "retry", f"a retry marker: {rows(cache)}")
    third = Run(denox, model, cache)
    check(f"{target} crashed process {second.pid}" in third.stderr, f"the conclusion is logged: {third.what}")
    avoided(third, "time")
    fourth = Run(denox, model, cache)
    check("crashed process" not in fourth.stderr, f"concluded once: {fourth.what}")
    avoided(fourth, "time")
    if alternatives:
        check(fourth.report()["measured_edges"] == 0, "the fourth run measures nothing")

    # 1b. One death while timing the edge (as a game quit with exit() during a background tune),
    #     then a normal run: the edge is measured alone, stored and used, not blamed.
    cache = f"{work}/quit.sqlite3"
    first = Run(denox, model, cache, f"time:{target}")
    first.crashed_at("time", "serial", target)
    second = Run(denox, model, cache)
    check("measuring it again alone" in second.stderr and "crashed process" not in second.stderr, f"not blamed: {second.what}")
    r = second.report()
    check(r["failed_edges"] == 0 and (target in whats(r) or alternatives), f"the edge is measured and used: {whats(r)} {r}")
    check(all(t.startswith("ok ") for t in rows(cache)), f"only results are left: {rows(cache)}")

    # 2. A crash while compiling shaders on several threads: the next run retries the edges that
    #    were in flight alone (and crashes there, the hook still set); the one after records it.
    cache = f"{work}/parallel_compile.sqlite3"
    first = Run(denox, model, cache, f"compile:{target}")
    first.crashed_at("compile", "parallel", target)
    left = markers(cache)
    check(left and all(m["pid"] == str(first.pid) and m["phase"] == "compile" and m["mode"] == "parallel" for m in left),
          f"markers of the parallel compile: {rows(cache)}")
    check(len(left) <= max(1, os.cpu_count() or 1), f"only the edges in flight are marked: {rows(cache)}")
    second = Run(denox, model, cache, f"compile:{target}")
    check(re.search(rf"process {first.pid} died .* while compiling the shaders of several edges on several threads, "
                    rf"{re.escape(target)} among them; measuring it again one edge at a time", second.stderr),
          f"the retry is logged: {second.what}")
    second.crashed_at("compile", "serial", target)
    mine = [m for m in markers(cache) if m["pid"] == str(second.pid)]
    check(len(mine) == 1 and mine[0]["phase"] == "compile" and mine[0]["mode"] == "retry", f"a retry marker: {rows(cache)}")
    third = Run(denox, model, cache)
    check(f"{target} crashed process {second.pid}" in third.stderr, f"the conclusion is logged: {third.what}")
    avoided(third, "compile")

    # 3. A crash while creating driver pipelines on several threads; the next run, without the
    #    hook, retries the edges alone and measures every edge.
    cache = f"{work}/parallel_pipeline.sqlite3"
    first = Run(denox, model, cache, f"pipeline:{target}")
    first.crashed_at("pipeline", "parallel", target)
    left = markers(cache)
    check(left and all(m["phase"] == "pipeline" and m["mode"] == "parallel" for m in left), f"pipeline markers: {rows(cache)}")
    second = Run(denox, model, cache)
    check(re.search(rf"while creating the driver pipelines of several edges on several threads, {re.escape(target)} among them",
                    second.stderr), f"the retry is logged: {second.what}")
    r = second.report()
    check(r["failed_edges"] == 0 and r["measured_edges"] == r["edges"] == base["edges"] and r["cached_edges"] == 0,
          f"every edge measured, alone or not: {r}")
    check(target in whats(r) or alternatives, f"the retried edge is used again: {whats(r)}")
    check(all(t.startswith("ok ") for t in rows(cache)), f"only results are left: {rows(cache)}")
    print(f"ok: crashes in time/compile/pipeline of {target} concluded ({len(left)} edge(s) retried alone after the pipeline crash)")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Hang detection (issue 16 goals): how long after a rank hangs the group is restarted, what the
progress reports cost a training step, and how long a metrics scrape takes with 16 ranks. Run by
hand (about 3 minutes):

  .venv/bin/python tools/bench/hang/run.py                  # --hang-timeout 10, 3 A/B rounds
  .venv/bin/python tools/bench/hang/run.py --anchor-window 0   # without the torchrun run

TZRUN_BIN_DIR (default build/bin) names the directory of tzrun and tzrec_train.

Job: examples/configs/synthetic_criteo.config (tables of --rows-per-table rows), 2 ranks on CPU
over Gloo, data from tools/gen_data/gen_data.py --kind criteo, log_step_count_steps 1.

1. Hang -> restart. `tzrun --hang-timeout S --max-restarts 1 ... tzrec_train --continue_train`;
   rank 1 is SIGSTOPped after --stop-after progress lines. Figures from the moment of the
   SIGSTOP: "hang detected" line, "will restart worker group" line (the hung group is gone and a
   new one is being started), the restarted group's first progress line. Three times, by the
   backtrace tool on PATH (the report carries the hung rank's backtraces, taken before the
   kill): eu-stack (elfutils, preferred), gdb only, none.
   Anchor, in the same run: torchrun has no hang detection (its ranks wait in the collective
   until the process group's timeout, 1800 s in TorchEasyRec): the same job under the venv's
   torchrun (--max-restarts 1) with the same SIGSTOP, watched for --anchor-window s; the figure
   is ">= window" when it did not restart in that time (it is then killed).
2. Step cost of progress reports (A/B, alternating rounds): the same job without the SIGSTOP, under
   tzrun with --hang-timeout (TZRUN_PROGRESS_FILE set: tzrec_train writes its step at most twice
   a second) and without; median samples/s of rank 0's progress lines after the first 5.
3. Scrape latency: `tzrun --nproc-per-node 16 --metrics-port P` of 16 Python workers reporting
   progress (examples/progress_helper.py) every 0.1 s; 100 GET /metrics, median and p95.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(ROOT, "tools", "bench", "flash"))
from run import make_config, rank_pid, sh  # noqa: E402 (the flash bench's helpers)

BIN = os.environ.get("TZRUN_BIN_DIR") or os.path.join(ROOT, "build", "bin")  # tzrun, tzrec_train
VENV_BIN = os.path.dirname(sys.executable)
PROGRESS = re.compile(r"^step (\d+)/(\d+)\s+loss (\S+).*?samples/s (\S+)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tools_path(work: str, kind: str, tools: tuple) -> str:
    """A PATH with build/bin, the venv, `timeout` and just the given backtrace tools."""
    d = os.path.join(work, f"path-{kind}")
    os.makedirs(d, exist_ok=True)
    for tool in ("timeout", "sh", "env", *tools):
        link = os.path.join(d, tool)
        if not os.path.exists(link):
            os.symlink(f"/usr/bin/{tool}", link)
    return f"{BIN}:{VENV_BIN}:{d}"


def kill_tree(root: int) -> None:
    """SIGKILL `root` and all its descendants (torchrun starts its workers in sessions of their
    own, so killing its process group leaves them running, holding the output pipe open)."""
    children = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d))
    todo = [root]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def job(launcher, md, cfg, data, a, extra=()):
    edit = {"train_config.num_steps": a.steps, "train_config.num_epochs": 0,
            "train_config.log_step_count_steps": 1, "train_config.save_checkpoints_steps": 50,
            "data_config.batch_size": a.batch}
    return [*launcher, "--nproc-per-node=2", "--max-restarts=1", *extra,
            os.path.join(BIN, "tzrec_train"), "--pipeline_config_path", cfg, "--model_dir", md,
            "--train_input_path", data, "--eval_input_path", data,
            "--edit_config_json", json.dumps(edit), "--continue_train"]


def hang_run(launcher, md, cfg, data, a, path, window=None, extra=()):
    """Times from the SIGSTOP of rank 1: detected, restarted, first step after the restart."""
    cmd = job(launcher, md, cfg, data, a, extra)
    print("+", " ".join(cmd), file=sys.stderr)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=dict(os.environ, PATH=path), start_new_session=True)
    steps, t = 0, {}
    deadline = None
    # a hung job prints nothing, so the window is enforced by a timer, not by the next line
    timer = threading.Timer(window or 0, lambda: t.get("restart") or kill_tree(p.pid))
    for line in p.stdout:
        now = time.monotonic()
        if PROGRESS.match(line):
            steps += 1
            if steps == a.stop_after:
                os.kill(rank_pid(md, 1), signal.SIGSTOP)
                t["stop"] = now
                deadline = now + window if window else None
                if window:
                    timer.start()
            elif "restart" in t and "first_step" not in t:
                t["first_step"] = now
        elif "hang detected: rank 1" in line and "detected" not in t:
            t["detected"] = now
        elif "will restart worker group" in line and "stop" in t and "restart" not in t:
            t["restart"] = now
        if deadline is not None and now > deadline and "restart" not in t:
            break
    timer.cancel()
    if deadline is not None and "restart" not in t:
        kill_tree(p.pid)
        p.wait()
        return {"restart": None, "window": window}
    rc = p.wait()
    if rc != 0 or "first_step" not in t:
        raise SystemExit(f"hang run failed (exit {rc}, times {t})")
    return {k: t[k] - t["stop"] for k in ("detected", "restart", "first_step") if k in t}


def step_rate(launcher, md, cfg, data, a, extra):
    """(median samples/s of rank 0's progress lines after the first 5, CPU seconds of the whole
    job: tzrun, its workers and their threads, user + system). The CPU time is the figure that
    holds on a busy machine: the work is fixed, so only the reports' own cost changes it."""
    subprocess.run(["rm", "-rf", md], check=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(job(launcher, md, cfg, data, a, extra), capture_output=True, text=True,
                         env=dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}"), check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rates = [float(m.group(4)) for m in map(PROGRESS.match, out.stdout.splitlines()) if m]
    return statistics.median(rates[5:] or rates), round(cpu, 2)


SCRAPER_WORKER = """
import os, sys, time
sys.path.insert(0, {examples!r})
from progress_helper import report_progress
for step in range(10**6):
    report_progress(step, "train", every=0.1)
    if os.path.exists({stop!r}):
        break
    time.sleep(0.1)
"""


def scrape_latency(work, n=16, scrapes=100):
    w = os.path.join(work, "scrape_worker.py")
    stop = os.path.join(work, "scrape_stop")
    if os.path.exists(stop):
        os.remove(stop)
    with open(w, "w") as f:
        f.write(SCRAPER_WORKER.format(examples=os.path.join(ROOT, "examples"), stop=stop))
    port = free_port()
    p = subprocess.Popen([os.path.join(BIN, "tzrun"), "--master-port", str(free_port()),
                          f"--nproc-per-node={n}", f"--metrics-port={port}", w],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        deadline = time.monotonic() + 60
        while True:  # every rank has reported once
            try:
                text = urllib.request.urlopen(url, timeout=2).read().decode()
                if text.count("tzrun_worker_last_step{") >= n:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("metrics never showed every rank")
            time.sleep(0.2)
        ms = []
        for _ in range(scrapes):
            t0 = time.perf_counter()
            urllib.request.urlopen(url, timeout=2).read()
            ms.append(1000 * (time.perf_counter() - t0))
            time.sleep(0.02)
    finally:
        open(stop, "w").close()
        p.wait(60)
    ms.sort()
    return {"median_ms": statistics.median(ms), "p95_ms": ms[int(0.95 * len(ms)) - 1],
            "lines": len(text.splitlines())}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hang-timeout", type=int, default=10)
    ap.add_argument("--rows-per-table", type=int, default=20000)
    ap.add_argument("--train-rows", type=int, default=40000)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--stop-after", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3, help="A/B rounds of the step-cost runs")
    ap.add_argument("--anchor-window", type=int, default=60,
                    help="seconds torchrun is watched for a restart (0: no torchrun run)")
    ap.add_argument("--ab-only", action="store_true",
                    help="only the step-cost A/B and the scrape (no hang runs)")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "tzrec_hangbench"))
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    cfg = make_config(a.work, a.rows_per_table)
    data_dir = os.path.join(a.work, f"criteo-{a.train_rows}-{a.rows_per_table}")
    if not os.path.isdir(data_dir):
        sh([sys.executable, os.path.join(ROOT, "tools", "gen_data", "gen_data.py"), "--kind",
            "criteo", "--rows", a.train_rows, "--out", data_dir, "--num-buckets",
            ",".join([str(a.rows_per_table)] * 26)])
    data = os.path.join(data_dir, "*.parquet")
    tz = [os.path.join(BIN, "tzrun"), "--standalone"]
    hang = (f"--hang-timeout={a.hang_timeout}",)
    out = {"hang_timeout_s": a.hang_timeout}
    kinds = () if a.ab_only else ("eu_stack", "gdb", "none")
    for kind, tools in (("eu_stack", ("eu-stack",)), ("gdb", ("gdb",)), ("none", ())):
        if kind not in kinds:
            continue
        path = tools_path(a.work, kind, tools)
        md = os.path.join(a.work, f"model_hang_{kind}")
        subprocess.run(["rm", "-rf", md], check=True)
        out[f"tzrun_{kind}"] = hang_run(tz, md, cfg, data, a, path, extra=hang)
    if a.anchor_window > 0 and not a.ab_only:
        md = os.path.join(a.work, "model_hang_torchrun")
        subprocess.run(["rm", "-rf", md], check=True)
        out["torchrun"] = hang_run([os.path.join(VENV_BIN, "torchrun"), "--standalone",
                                    "--no-python"], md, cfg,
                                   data, a, f"{BIN}:{os.environ['PATH']}", window=a.anchor_window)
    a_on, a_off = [], []
    for i in range(a.rounds):  # alternating rounds, each other one in the opposite order (ABBA)
        for on in ((True, False) if i % 2 == 0 else (False, True)):
            r = step_rate(tz, os.path.join(a.work, "model_ab"), cfg, data, a, hang if on else ())
            (a_on if on else a_off).append(r)
    out["ab"] = {"with_reports": a_on, "without": a_off}  # (samples/s, job CPU s) per round
    out["scrape_16_ranks"] = scrape_latency(a.work)
    s = a.hang_timeout
    for kind in kinds:
        r = out[f"tzrun_{kind}"]
        print(f"hang -> restart (backtrace: {kind:8}): detected {r['detected']:.2f} s, group restarted "
              f"{r['restart']:.2f} s (goal <= {s + 1} s), first step {r['first_step']:.2f} s")
    if "torchrun" in out:
        tr, ours = out["torchrun"], out["tzrun_eu_stack"]["restart"]
        shown = f">= {tr['window']} s (no restart)" if tr["restart"] is None else \
            f"{tr['restart']:.2f} s"
        bound = tr["window"] if tr["restart"] is None else tr["restart"]
        print(f"anchor torchrun: restarted {shown}; ratio >= {bound / ours:.1f}x "
              "(TorchEasyRec's process-group timeout: 1800 s)")
    on, off = statistics.median(r[0] for r in a_on), statistics.median(r[0] for r in a_off)
    con, coff = statistics.median(r[1] for r in a_on), statistics.median(r[1] for r in a_off)
    print(f"step cost of progress reports: {on:.0f} vs {off:.0f} samples/s "
          f"({100 * (on / off - 1):+.1f} %); job CPU {con:.2f} vs {coff:.2f} s "
          f"({100 * (con / coff - 1):+.1f} %); rounds {a_on} / {a_off}")
    sc = out["scrape_16_ranks"]
    print(f"scrape with 16 ranks ({sc['lines']} lines): median {sc['median_ms']:.2f} ms, "
          f"p95 {sc['p95_ms']:.2f} ms (goal <= 5 ms)")
    print(json.dumps(out))


if __name__ == "__main__":
    main()

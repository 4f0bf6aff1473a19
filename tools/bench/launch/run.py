#!/usr/bin/env python3
"""Launch benchmark (run by hand): tzrun vs torchrun, same minimal worker.

The worker (barrier_worker, C++) connects to the launcher's store at
MASTER_ADDR:MASTER_PORT, ADDs 1 to a counter, WAITs until all WORLD_SIZE workers
have arrived, prints the wall-clock time it passed the barrier and exits 0.

Figures, for nproc in 1 2 4 8 16, median of --repeats runs:
  launch->barrier : launcher exec until the last worker passed the barrier
  end-to-end      : launcher exec until the launcher exited
  crash->restart  : a worker exits 1 at attempt 0; time until the restarted group
                    (attempt 1) passed its barrier, measured from the crash
Usage: .venv/bin/python tools/bench/launch/run.py [--repeats 5] [--nprocs 1,2,4,8,16]
"""
import argparse
import os
import pathlib
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[3]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(cmd, env, outdir):
    t0 = time.time()
    p = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    t1 = time.time()
    if p.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    marks = {}
    for f in pathlib.Path(outdir).glob("barrier-*"):
        attempt, rank = f.name.split("-")[1:]
        marks.setdefault(int(attempt), []).append(float(f.read_text()))
    crash = pathlib.Path(outdir, "crash")
    crash_t = float(crash.read_text()) if crash.exists() else None
    return t0, t1, marks, crash_t


def measure(launcher, nproc, worker, crash):
    outdir = tempfile.mkdtemp(prefix="tzbench_")
    env = dict(os.environ, BENCH_OUT=outdir, BENCH_CRASH="1" if crash else "0")
    cmd = [launcher, f"--nproc-per-node={nproc}", f"--master-port={free_port()}",
           "--no-python", "--max-restarts=1" if crash else "--max-restarts=0",
           "--monitor-interval=0.1", worker]
    try:
        t0, t1, marks, crash_t = launch(cmd, env, outdir)
    finally:
        shutil.rmtree(outdir, ignore_errors=True)
    last = max(marks[max(marks)])
    if crash:
        return last - crash_t
    return last - t0, t1 - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--nprocs", default="1,2,4,8,16")
    ap.add_argument("--tzrun", default=str(ROOT / "build/bin/tzrun"))
    ap.add_argument("--torchrun", default=str(pathlib.Path(sys.executable).parent / "torchrun"))
    ap.add_argument("--worker", default=str(ROOT / "build/bin/bench_barrier_worker"))
    a = ap.parse_args()
    for exe in (a.tzrun, a.torchrun, a.worker):
        if not os.access(exe, os.X_OK):
            raise SystemExit(f"{exe} not found: build with `cmake --build --preset default` "
                             "and run scripts/setup.sh")
    print(f"{'nproc':>5} | {'metric':<16} | {'tzrun ms':>9} | {'torchrun ms':>11} | {'ratio':>6}")
    print("-" * 60)
    for n in [int(x) for x in a.nprocs.split(",")]:
        rows = {"launch->barrier": ([], []), "end-to-end": ([], []), "crash->restart": ([], [])}
        for _ in range(a.repeats):
            for i, exe in enumerate((a.tzrun, a.torchrun)):
                lb, e2e = measure(exe, n, a.worker, crash=False)
                rows["launch->barrier"][i].append(lb)
                rows["end-to-end"][i].append(e2e)
                rows["crash->restart"][i].append(measure(exe, n, a.worker, crash=True))
        for name, (ours, theirs) in rows.items():
            mo, mt = statistics.median(ours) * 1e3, statistics.median(theirs) * 1e3
            print(f"{n:>5} | {name:<16} | {mo:>9.1f} | {mt:>11.1f} | {mt / mo:>5.1f}x", flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Rendezvous benchmark (run by hand): tzrun vs torchrun's c10d rendezvous, same run.

Every "node" is one agent on this machine with its own --local-addr (127.0.0.K), all
joining one c10d rendezvous on 127.0.0.1 (agent 0 hosts it: is_host=1, the others
is_host=0). Figures:

  rendezvous N   N agents (--nnodes N, 1 worker each) started at once; time from the
                 launch until the last of the N workers started (agent start-up +
                 rendezvous + rank assignment + spawn). Median of --repeats runs.
  node loss      3 agents (--nnodes 2:3, gloo all_reduce workers running); one node
                 (agent + worker) is SIGKILLed; time until both survivors' workers of
                 the new 2-node world started. Median of --repeats runs.

Both launchers get the same --rdzv-conf (last_call_timeout=1, keep_alive_interval=1,
keep_alive_max_attempt=3, join_timeout=120) and the same workers. Ratios are
torchrun / tzrun (> 1: tzrun faster).

usage: .venv/bin/python tools/bench/rendezvous/bench.py [--sizes 2,4,8,16] [--repeats 3]
           [--tzrun build/bin/tzrun] [--torchrun .venv/bin/torchrun] [--skip-node-loss]
           [--launchers tzrun,torchrun]
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[3]
CONF = "last_call_timeout=1,keep_alive_interval=1,keep_alive_max_attempt=3,join_timeout=120"

# Worker: records its start (wall time, host label, env), then depending on argv[2]:
#   exit  -> exit 0 at once
#   loop  -> gloo all_reduce loop (a dead peer makes it fail fast) until OUTDIR/stop
WORKER = r'''
import datetime, json, os, sys, time
out, mode = sys.argv[1], sys.argv[2]
e = os.environ
rec = dict(t=time.time(), node=e.get("BENCH_NODE"), pid=os.getpid(), rank=int(e["RANK"]),
           world=int(e["WORLD_SIZE"]), restart=int(e["TORCHELASTIC_RESTART_COUNT"]))
with open(os.path.join(out, "starts.jsonl"), "a") as f:
    f.write(json.dumps(rec) + "\n")
if mode == "exit":
    sys.exit(0)
import torch, torch.distributed as dist
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
while not os.path.exists(os.path.join(out, "stop")):
    dist.all_reduce(torch.ones(1))
    time.sleep(0.05)
sys.exit(0)
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_starts(out: pathlib.Path) -> list[dict]:
    p = out / "starts.jsonl"
    if not p.exists():
        return []
    recs = []
    for line in p.read_text().splitlines():
        try:
            recs.append(json.loads(line))
        except ValueError:
            pass
    return recs


class Run:
    """N agents of one launcher on loopback, one rendezvous."""

    def __init__(self, launcher: str, kind: str, n: int, nnodes: str, mode: str,
                 max_restarts: int):
        self.kind, self.n = kind, n
        self.out = pathlib.Path(tempfile.mkdtemp(prefix=f"rdzvbench_{kind}_"))
        (self.out / "w.py").write_text(WORKER)
        port = free_port()
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("PET_", "TORCHELASTIC_")) and k not in
                    ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
        self.env["PATH"] = str(pathlib.Path(sys.executable).parent) + os.pathsep + \
            self.env.get("PATH", "/usr/bin:/bin")
        self.env.setdefault("OMP_NUM_THREADS", "1")
        self.cmds = []
        for i in range(n):
            conf = f"{CONF},is_host={1 if i == 0 else 0}"
            self.cmds.append([launcher, f"--nnodes={nnodes}", "--nproc-per-node=1",
                              "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}",
                              "--rdzv-id=bench", f"--rdzv-conf={conf}",
                              f"--local-addr=127.0.0.{i + 1}",
                              f"--max-restarts={max_restarts}", "--monitor-interval=0.1",
                              str(self.out / "w.py"), str(self.out), mode])
        self.procs: list[subprocess.Popen] = []

    def start(self, indices=None) -> float:
        t0 = time.time()
        for i in indices if indices is not None else range(self.n):
            log = open(self.out / f"agent{i}.log", "wb")  # noqa: SIM115
            self.procs.append(subprocess.Popen(
                self.cmds[i], env=dict(self.env, BENCH_NODE=str(i)), stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
            log.close()
        return t0

    def wait_starts(self, pred, timeout: float) -> list[dict]:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            recs = read_starts(self.out)
            if pred(recs):
                return recs
            time.sleep(0.02)
        tails = "\n".join(f"--- agent{i}.log\n" + (self.out / f"agent{i}.log").read_text(
            errors="replace")[-1500:] for i in range(len(self.procs)))
        raise SystemExit(f"{self.kind}: timed out after {timeout}s\n{tails}")

    def close(self) -> None:
        (self.out / "stop").touch()
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
        for rec in read_starts(self.out):  # workers live in their own sessions
            try:
                os.kill(rec["pid"], signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        shutil.rmtree(self.out, ignore_errors=True)


def bench_rendezvous(launcher: str, kind: str, n: int) -> float:
    run = Run(launcher, kind, n, str(n), "exit", 0)
    try:
        t0 = run.start()
        recs = run.wait_starts(lambda r: len({x["node"] for x in r}) >= n, 300)
        for p in run.procs:
            p.wait(timeout=120)
        return max(x["t"] for x in recs) - t0
    finally:
        run.close()


def bench_node_loss(launcher: str, kind: str) -> float:
    run = Run(launcher, kind, 3, "2:3", "loop", 3)
    try:
        run.start()
        run.wait_starts(lambda r: sum(1 for x in r if x["world"] == 3) >= 3, 300)
        time.sleep(2.0)  # all_reduce loop running
        victim = [x for x in read_starts(run.out) if x["node"] == "2"][-1]
        t_kill = time.time()
        os.kill(run.procs[2].pid, signal.SIGKILL)
        os.kill(victim["pid"], signal.SIGKILL)
        recs = run.wait_starts(
            lambda r: {x["node"] for x in r if x["world"] == 2 and x["t"] > t_kill} == {"0", "1"},
            300)
        return max(x["t"] for x in recs if x["world"] == 2 and x["t"] > t_kill) - t_kill
    finally:
        run.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="2,4,8,16")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tzrun", default=str(ROOT / "build" / "bin" / "tzrun"))
    ap.add_argument("--torchrun", default=str(pathlib.Path(sys.executable).parent / "torchrun"))
    ap.add_argument("--skip-node-loss", action="store_true")
    ap.add_argument("--launchers", default="tzrun,torchrun",
                    help="comma list; one launcher alone gives no ratio")
    args = ap.parse_args()
    launchers = {k: getattr(args, k) for k in args.launchers.split(",")}
    for kind, exe in launchers.items():
        if not os.access(exe, os.X_OK):
            raise SystemExit(f"{kind} not found at {exe} (pass --{kind} PATH)")

    rows = []
    scenarios = [(f"rendezvous {n} agents", lambda exe, kind, n=n: bench_rendezvous(exe, kind, n))
                 for n in map(int, args.sizes.split(","))]
    if not args.skip_node_loss:
        scenarios.append(("node loss -> restarted (3->2)", bench_node_loss))
    for name, fn in scenarios:
        res = {}
        for rep in range(args.repeats):
            for kind, exe in launchers.items():  # interleaved: same machine load for both
                res.setdefault(kind, []).append(fn(exe, kind))
                print(f"  {name:32s} {kind:8s} run {rep + 1}: {res[kind][-1]:.3f}s",
                      file=sys.stderr, flush=True)
        tz = statistics.median(res["tzrun"]) if "tzrun" in res else float("nan")
        tr = statistics.median(res["torchrun"]) if "torchrun" in res else float("nan")
        rows.append((name, tz, tr, tr / tz if tz > 0 else float("nan")))

    print(f"\nmedian of {args.repeats} runs, {os.cpu_count()} CPUs; ratio = torchrun / tzrun\n")
    print(f"| {'scenario':32s} | {'tzrun (s)':>9s} | {'torchrun (s)':>12s} | {'ratio':>6s} |")
    print(f"|{'-' * 34}|{'-' * 11}|{'-' * 14}|{'-' * 8}|")
    for name, tz, tr, ratio in rows:
        print(f"| {name:32s} | {tz:9.3f} | {tr:12.3f} | {ratio:5.1f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""DLRM training samples/s (tzrec_train vs TorchRec) and checkpoint save/restore GB/s vs raw disk
write speed. Run by hand; see tools/bench/train/README.md.

  .venv/bin/python tools/bench/train/run.py                     # everything, defaults below
  .venv/bin/python tools/bench/train/run.py --skip ckpt --repeat 5
  .venv/bin/python tools/bench/train/run.py --skip train --ckpt-mb 512

Every command run is echoed to stderr, so each side can be rerun alone.

Training (same config, data, per-rank batch, optimizers, 2 ranks on CPU over Gloo, table-wise):
  data     tools/gen_data/gen_data.py --kind criteo with the config's num_buckets, written once
           into --data-dir (default: TMPDIR/tzrec_trainbench/criteo-ROWS-FILES-HASH) and reused.
  tzrec    tzrun --standalone --nproc-per-node N tzrec_train ... --edit_config_json
           {num_steps = warmup + steps, log_step_count_steps = --log-every, table_wise,
            arch_with_sparse = false (TorchRec's plain DLRM has no arch_with_sparse), no eval}.
           --method progress (default): rank 0's progress lines give samples/s per window of
           --log-every steps (every step starts with a collective all ranks join, so the ranks
           are in step); the windows after the first `warmup` steps are combined as total
           samples / total seconds (seconds of a window = its samples / its samples/s). --method diff: two runs with num_steps =
           warmup and warmup + steps; samples/s = steps * batch * N / (wall(2) - wall(1)).
  torchrec tools/bench/train/torchrec_dlrm.py under the TorchRec venv's torchrun: warmup steps,
           then `steps` timed steps between barriers (slowest rank).
  Reading Parquet is inside both figures (tzrec_train: its background reader thread;
  torchrec_dlrm.py --input stream: pyarrow in the loop). --torchrec-input memory|both also runs
  TorchRec with the batches read before the loop (reading cost out: an upper bound for TorchRec).
  --repeat R alternates the sides R times; the median of each is compared.

Checkpoints: tzrec_checkpoint_check --phase bench --dir D --mb M under tzrun (N ranks): every rank
saves and restores an M MiB [rows, 128] fp32 shard plus an optimizer state of the same size
through tzrec::checkpoint::CheckpointManager (the code tzrec_train uses: temp dir, fsync, rename),
then writes the same bytes raw with fwrite + fsync; bytes = 2 * M MiB * N. Beside it, raw disk
write speed into the same folder: N python processes each write 2*M MiB (4 MiB writes) + fsync,
started together, and `dd if=/dev/zero bs=4M conv=fsync` of the total. save % = save GB/s / raw
GB/s (goal >= 70%). Restore reads the checkpoint it just wrote, so it mostly reads the page cache;
it is compared with a python read of the same files right after (also cached).
Also reported: the real tzrec_train checkpoint of the training run (the time from the last
progress line to the "saved" line on rank 0's stdout, and the checkpoint folder's size).
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import math
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "tools", "config"))
import pbtext  # noqa: E402 (tools/config/pbtext.py: .config text -> dict)

PROGRESS = re.compile(r"^step (\d+)/(\d+)\s+loss (\S+)\s.*?samples/s (\S+)")


def rel(path: str) -> str:
    return os.path.join(ROOT, path)


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=rel("examples/configs/synthetic_criteo.config"))
    ap.add_argument("--rows", type=int, default=400000, help="rows of synthetic data (default 400000)")
    ap.add_argument("--files", type=int, default=4, help="Parquet files (default 4)")
    ap.add_argument("--data-dir", default="", help="where the data is cached (default under TMPDIR)")
    ap.add_argument("--nproc", type=int, default=2, help="ranks of both sides (default 2)")
    ap.add_argument("--batch", type=int, default=0, help="per-rank batch (default: the config's)")
    ap.add_argument("--warmup", type=int, default=40, help="untimed steps (default 40)")
    ap.add_argument("--steps", type=int, default=200, help="timed steps (default 200)")
    ap.add_argument("--log-every", type=int, default=20,
                    help="tzrec_train log_step_count_steps; divides --warmup and --steps")
    ap.add_argument("--sharding", choices=("table_wise", "column_wise", "row_wise",
                                           "data_parallel", "auto"), default="table_wise",
                    help="both sides (auto: tzrec_train's planner chooses; TorchRec table_wise)")
    ap.add_argument("--arch-with-sparse", action="store_true",
                    help="keep tzrec_train's arch_with_sparse = true (TorchRec's DLRM lacks it)")
    ap.add_argument("--method", choices=("progress", "diff"), default="progress")
    ap.add_argument("--torchrec-input", choices=("stream", "memory", "both"), default="stream")
    ap.add_argument("--repeat", type=int, default=3, help="alternating runs per side (default 3)")
    ap.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of every rank")
    ap.add_argument("--skip", action="append", default=[],
                    choices=("train", "tzrec", "torchrec", "ckpt"), help="leave a part out")
    ap.add_argument("--ckpt-mb", type=int, default=256, help="MiB of weights per rank (default 256)")
    ap.add_argument("--ckpt-repeat", type=int, default=3, help="checkpoint bench rounds (default 3)")
    ap.add_argument("--ckpt-dir", default="",
                    help="folder for checkpoints and raw writes (default: a temp dir in TMPDIR)")
    ap.add_argument("--tzrun", default=rel("build/bin/tzrun"))
    ap.add_argument("--train-bin", default=rel("build/bin/tzrec_train"))
    ap.add_argument("--ckpt-bin", default=rel("build/bin/tzrec_checkpoint_check"))
    ap.add_argument("--python", default=rel(".venv/bin/python"), help="python with pyarrow")
    ap.add_argument("--torchrec-venv", default=rel(".venv-torchrec"))
    ap.add_argument("--json-out", default="", help="write every raw figure here")
    ap.add_argument("--keep", action="store_true", help="keep model dirs and checkpoints")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per command")
    a = ap.parse_args()
    if a.warmup % a.log_every or a.steps % a.log_every or a.steps <= 0:
        ap.error(f"--log-every {a.log_every} must divide --warmup {a.warmup} and --steps {a.steps}")
    return a


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run_lines(cmd: list[str], env: dict | None, timeout: int) -> tuple[int, list[tuple[float, str]], float]:
    """Runs cmd; returns (rc, [(monotonic seconds since start, line)], wall seconds)."""
    log("+ " + " ".join(shlex.quote(c) for c in cmd))
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=env, cwd=ROOT, bufsize=1)
    lines = []
    deadline = t0 + timeout
    assert p.stdout is not None
    for line in p.stdout:
        lines.append((time.monotonic() - t0, line.rstrip("\n")))
        if time.monotonic() > deadline:
            p.kill()
            break
    rc = p.wait()
    return rc, lines, time.monotonic() - t0


def fail_run(what: str, rc: int, lines: list[tuple[float, str]]) -> None:
    tail = "\n".join(l for _, l in lines[-30:])
    sys.exit(f"run.py: {what} failed (exit {rc}); last output:\n{tail}")


# ---------------------------------------------------------------------------------------------
# data

def config_buckets(config: dict) -> list[int]:
    out = []
    for fc in config["feature_configs"]:
        body = fc.get("id_feature")
        if body is not None:
            out.append(int(body.get("num_buckets") or body.get("hash_bucket_size")))
    return out


def ensure_data(a: argparse.Namespace, config: dict) -> str:
    buckets = config_buckets(config)
    if len(buckets) != 26:
        sys.exit(f"run.py: {a.config} has {len(buckets)} id features; gen_data --kind criteo "
                 "writes 26 (cat_0..cat_25)")
    key = hashlib.sha1(json.dumps([a.rows, a.files, buckets]).encode()).hexdigest()[:10]
    d = a.data_dir or os.path.join(tempfile.gettempdir(), "tzrec_trainbench",
                                   f"criteo-{a.rows}-{a.files}-{key}")
    marker = os.path.join(d, "gen_data.done")
    if os.path.exists(marker):
        log(f"data: reusing {d}")
        return d
    shutil.rmtree(d, ignore_errors=True)
    cmd = [a.python, rel("tools/gen_data/gen_data.py"), "--kind", "criteo", "--rows", str(a.rows),
           "--files", str(a.files), "--out", d, "--num-buckets", ",".join(map(str, buckets))]
    rc, lines, _ = run_lines(cmd, None, a.timeout)
    if rc != 0:
        fail_run("gen_data", rc, lines)
    with open(marker, "w") as f:
        f.write(" ".join(cmd) + "\n")
    return d


# ---------------------------------------------------------------------------------------------
# tzrec_train

def tzrec_cmd(a, data: str, model_dir: str, num_steps: int) -> list[str]:
    edits = {"train_config.num_steps": num_steps, "train_config.num_epochs": 0,
             "train_config.log_step_count_steps": a.log_every,
             "train_config.save_checkpoints_steps": 0, "eval_input_path": "",
             "model_config.dlrm.arch_with_sparse": bool(a.arch_with_sparse)}
    if a.batch:
        edits["data_config.batch_size"] = a.batch
    if a.sharding != "auto":
        edits["train_config.global_embedding_constraints.sharding_types"] = [a.sharding]
    return [a.tzrun, "--standalone", "--nproc-per-node", str(a.nproc), a.train_bin,
            "--pipeline_config_path", a.config, "--train_input_path", os.path.join(data, "*.parquet"),
            "--model_dir", model_dir, "--edit_config_json", json.dumps(edits)]


def dir_bytes(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total


def run_tzrec(a, data: str, work: str, env: dict, batch: int) -> dict:
    model_dir = os.path.join(work, "tzrec_model")
    shutil.rmtree(model_dir, ignore_errors=True)
    total = a.warmup + a.steps
    rc, lines, wall = run_lines(tzrec_cmd(a, data, model_dir, total), env, a.timeout)
    if rc != 0:
        fail_run("tzrec_train", rc, lines)
    windows = []  # (step, samples/s, t)
    saved_t = None
    for t, line in lines:
        m = PROGRESS.match(line)
        if m:
            windows.append((int(m.group(1)), float(m.group(4)), t))
        elif line.startswith("tzrec_train: saved ") and saved_t is None:
            saved_t = (t, line.split("saved ", 1)[1].split(" (")[0].strip())
    timed = [w for w in windows if w[0] > a.warmup]
    if len(timed) != a.steps // a.log_every:
        fail_run(f"tzrec_train printed {len(timed)} progress lines after step {a.warmup}, "
                 f"expected {a.steps // a.log_every}", rc, lines)
    window_samples = a.log_every * batch * a.nproc
    seconds = sum(window_samples / r for _, r, _ in timed)
    out = {"impl": "tzrec", "samples_per_s": len(timed) * window_samples / seconds,
           "seconds": seconds, "wall_s": wall, "window_rates": [r for _, r, _ in timed]}
    with open(os.path.join(model_dir, "metrics.json")) as f:
        out["metrics_samples_per_sec"] = json.load(f)["samples_per_sec"]
    if saved_t and windows:
        ckpt_dir = saved_t[1]
        nbytes = dir_bytes(ckpt_dir) if os.path.isdir(ckpt_dir) else 0
        out["train_ckpt"] = {"bytes": nbytes, "seconds": saved_t[0] - windows[-1][2],
                             "gb_per_s": nbytes / max(saved_t[0] - windows[-1][2], 1e-9) / 1e9}
    if a.method == "diff":
        shutil.rmtree(model_dir, ignore_errors=True)
        rc1, lines1, wall1 = run_lines(tzrec_cmd(a, data, model_dir, a.warmup), env, a.timeout)
        if rc1 != 0:
            fail_run("tzrec_train (warm-up only)", rc1, lines1)
        out["diff_seconds"] = wall - wall1
        out["progress_samples_per_s"] = out["samples_per_s"]
        out["samples_per_s"] = a.steps * batch * a.nproc / max(wall - wall1, 1e-9)
    if not a.keep:
        shutil.rmtree(model_dir, ignore_errors=True)
    return out


def run_torchrec(a, data: str, env: dict, input_mode: str) -> dict:
    cmd = [os.path.join(a.torchrec_venv, "bin", "torchrun"), "--standalone",
           f"--nproc-per-node={a.nproc}", rel("tools/bench/train/torchrec_dlrm.py"),
           "--config", a.config, "--data", os.path.join(data, "*.parquet"),
           "--warmup", str(a.warmup), "--iters", str(a.steps), "--input", input_mode,
           "--sharding", "table_wise" if a.sharding in ("auto", "row_wise") else a.sharding]
    if a.batch:
        cmd += ["--batch", str(a.batch)]
    rc, lines, wall = run_lines(cmd, env, a.timeout)
    results = [json.loads(l) for _, l in lines if l.startswith('{"impl": "torchrec"')]
    if rc != 0 or not results:
        fail_run("torchrec_dlrm.py", rc, lines)
    out = results[-1]
    out["wall_s"] = wall
    out["impl"] = f"torchrec ({input_mode})"
    return out


# ---------------------------------------------------------------------------------------------
# checkpoints

RAW_WRITER = r"""
import os, sys, time
path, nbytes, start = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
buf = os.urandom(4 << 20)
while time.time() < start: pass
t0 = time.time()
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
left = nbytes
while left > 0:
    left -= os.write(fd, buf[:min(left, len(buf))])
os.fsync(fd)
os.close(fd)
print(t0, time.time())
"""


def raw_python_write(a, d: str, per_proc: int) -> float:
    """N processes write per_proc bytes each + fsync, together; returns seconds (first start to
    last end)."""
    start = time.time() + 1.0
    procs = [subprocess.Popen([sys.executable, "-c", RAW_WRITER, os.path.join(d, f"raw-py-{i}"),
                               str(per_proc), str(start)], stdout=subprocess.PIPE, text=True)
             for i in range(a.nproc)]
    spans = [tuple(map(float, p.communicate()[0].split())) for p in procs]
    for i in range(a.nproc):
        os.remove(os.path.join(d, f"raw-py-{i}"))
    return max(e for _, e in spans) - min(s for s, _ in spans)


def raw_dd_write(d: str, total: int) -> float:
    path = os.path.join(d, "raw-dd")
    count = total // (4 << 20)
    cmd = ["dd", "if=/dev/zero", f"of={path}", "bs=4M", f"count={count}", "conv=fsync"]
    log("+ " + " ".join(cmd))
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    s = time.monotonic() - t0
    os.remove(path)
    return s


def cached_read(d: str) -> tuple[int, float]:
    """Reads every file under d (the checkpoint just restored); returns (bytes, seconds)."""
    files = [os.path.join(r, f) for r, _, fs in os.walk(d) for f in fs]
    t0 = time.monotonic()
    n = 0
    for path in files:
        with open(path, "rb", buffering=0) as f:
            while True:
                b = f.read(8 << 20)
                if not b:
                    break
                n += len(b)
    return n, time.monotonic() - t0


def run_ckpt(a, work: str, env: dict) -> dict:
    d = a.ckpt_dir or os.path.join(work, "ckpt")
    os.makedirs(d, exist_ok=True)
    rounds = []
    per_proc = 2 * a.ckpt_mb * (1 << 20)
    for i in range(a.ckpt_repeat):
        bench_dir = os.path.join(d, "bench")
        cmd = [a.tzrun, "--standalone", "--nproc-per-node", str(a.nproc), "--no-python",
               a.ckpt_bin, "--phase", "bench", "--dir", bench_dir, "--mb", str(a.ckpt_mb)]
        rc, lines, _ = run_lines(cmd, env, a.timeout)
        found = [l for _, l in lines if l.startswith("bench world=")]
        if rc != 0 or not found:
            fail_run("tzrec_checkpoint_check --phase bench", rc, lines)
        r = {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)", found[-1])}
        nbytes, read_s = cached_read(bench_dir)
        r["cached_read_gbps"] = nbytes / read_s / 1e9
        shutil.rmtree(bench_dir, ignore_errors=True)
        py_s = raw_python_write(a, d, per_proc)
        r["raw_python_gbps"] = per_proc * a.nproc / py_s / 1e9
        dd_s = raw_dd_write(d, per_proc * a.nproc)
        r["raw_dd_gbps"] = per_proc * a.nproc / dd_s / 1e9
        for k in ("raw_write", "raw_python", "raw_dd"):
            r[f"save_pct_{k}"] = 100 * r["save_gbps"] / r[f"{k}_gbps"]
        log(f"ckpt round {i + 1}: {json.dumps(r)}")
        rounds.append(r)
    if not a.keep:
        shutil.rmtree(d, ignore_errors=True)
    med = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    return {"rounds": rounds, "median": med}


# ---------------------------------------------------------------------------------------------

def fmt_k(x: float) -> str:
    return f"{x / 1000:.1f} k"


def main() -> int:
    a = parse_args()
    config = pbtext.load(a.config)
    batch = a.batch or int(config["data_config"]["batch_size"])
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    work = tempfile.mkdtemp(prefix="tzrec_trainbench_")
    results: dict = {"args": vars(a), "batch": batch, "load_before": os.getloadavg()}
    train = "train" not in a.skip
    sides = []
    if train and "tzrec" not in a.skip:
        for p in (a.tzrun, a.train_bin):
            if not os.access(p, os.X_OK):
                sys.exit(f"run.py: {p} is not an executable; build it (cmake --build build "
                         "--target tzrun tzrec_train) or pass --tzrun / --train-bin, or --skip tzrec")
        sides.append("tzrec")
    if train and "torchrec" not in a.skip:
        if not os.access(os.path.join(a.torchrec_venv, "bin", "torchrun"), os.X_OK):
            sys.exit(f"run.py: no {a.torchrec_venv}/bin/torchrun; run "
                     "tools/bench/embedding/setup_torchrec.sh (and pip install pyarrow there), "
                     "or --skip torchrec")
        modes = ["stream", "memory"] if a.torchrec_input == "both" else [a.torchrec_input]
        sides += [f"torchrec:{m}" for m in modes]
    per_side: dict[str, list[dict]] = {s: [] for s in sides}
    if sides:
        data = ensure_data(a, config)
        results["data"] = data
        for i in range(a.repeat):
            for s in sides:
                r = (run_tzrec(a, data, work, env, batch) if s == "tzrec"
                     else run_torchrec(a, data, env, s.split(":")[1]))
                log(f"round {i + 1} {s}: {r['samples_per_s']:.0f} samples/s")
                per_side[s].append(r)
        results["train"] = per_side
    if "ckpt" not in a.skip:
        if not os.access(a.ckpt_bin, os.X_OK):
            sys.exit(f"run.py: {a.ckpt_bin} is not an executable; build tzrec_checkpoint_check "
                     "or pass --ckpt-bin, or --skip ckpt")
        results["ckpt"] = run_ckpt(a, work, env)
    results["load_after"] = os.getloadavg()
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)

    if sides:
        med = {s: statistics.median(r["samples_per_s"] for r in per_side[s]) for s in sides}
        print(f"DLRM training, {a.nproc} ranks x {a.threads} thread(s), per-rank batch {batch}, "
              f"{a.warmup} warm-up + {a.steps} timed steps, sharding {a.sharding}, "
              f"median of {a.repeat} (method {a.method})")
        print(f"{'impl':<20} | {'samples/s':>10} | {'runs':<30} | tzrec / this")
        print("-" * 21 + "+" + "-" * 12 + "+" + "-" * 32 + "+" + "-" * 13)
        for s in sides:
            runs = ", ".join(fmt_k(r["samples_per_s"]) for r in per_side[s])
            ratio = (f"{med['tzrec'] / med[s]:.2f}x" if "tzrec" in med and s != "tzrec" else "-")
            print(f"{s:<20} | {fmt_k(med[s]):>10} | {runs:<30} | {ratio}")
        if "tzrec" in med:
            t = per_side["tzrec"]
            print(f"tzrec metrics.json samples_per_sec (whole run incl. warm-up): "
                  + ", ".join(fmt_k(r["metrics_samples_per_sec"]) for r in t))
            ck = [r["train_ckpt"] for r in t if "train_ckpt" in r]
            if ck:
                print("tzrec_train final checkpoint (last progress line -> 'saved' line): "
                      + ", ".join(f"{c['bytes'] / 1e6:.1f} MB in {c['seconds']:.3f} s = "
                                  f"{c['gb_per_s']:.3f} GB/s" for c in ck))
        results["train_median"] = med
    if "ckpt" in results:
        c = results["ckpt"]
        m = c["median"]
        print(f"\nCheckpoints: tzrec_checkpoint_check --phase bench, {a.nproc} ranks x "
              f"{a.ckpt_mb} MiB weights + {a.ckpt_mb} MiB optimizer state = "
              f"{m['bytes'] / 1e9:.3f} GB, median of {a.ckpt_repeat} (GB = 1e9 bytes)")
        print(f"  save        {m['save_gbps']:.3f} GB/s   restore {m['restore_gbps']:.3f} GB/s "
              f"(page-cache read of the same files: {m['cached_read_gbps']:.3f} GB/s)")
        print(f"  raw write   {m['raw_write_gbps']:.3f} GB/s (in the bench: fwrite+fsync, "
              f"{a.nproc} ranks)   python write+fsync x{a.nproc}: {m['raw_python_gbps']:.3f} GB/s"
              f"   dd conv=fsync: {m['raw_dd_gbps']:.3f} GB/s")
        print(f"  save / raw  median over rounds of save GB/s / raw GB/s of the same round: "
              f"{m['save_pct_raw_write']:.0f}% of the bench's raw write, "
              f"{m['save_pct_raw_python']:.0f}% of python x{a.nproc}, "
              f"{m['save_pct_raw_dd']:.0f}% of dd (goal >= 70%)")
        for j, r in enumerate(c["rounds"]):
            print(f"  round {j + 1}: save {r['save_gbps']:.3f} restore {r['restore_gbps']:.3f} | "
                  f"raw {r['raw_write_gbps']:.3f} py {r['raw_python_gbps']:.3f} "
                  f"dd {r['raw_dd_gbps']:.3f} GB/s | save/raw {r['save_pct_raw_write']:.0f}% "
                  f"{r['save_pct_raw_python']:.0f}% {r['save_pct_raw_dd']:.0f}%")
    print(f"load average before {results['load_before'][0]:.2f}, after "
          f"{results['load_after'][0]:.2f}")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

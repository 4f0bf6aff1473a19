#!/usr/bin/env python3
"""Flash checkpoints vs disk checkpoints (issue 16 goals): the training stall per save and the time
from a rank's crash to the restarted group's first step, both measured in the same run. Run by hand.

  .venv/bin/python tools/bench/flash/run.py                 # ~1 GB of state (26 tables x 300000 rows)
  .venv/bin/python tools/bench/flash/run.py --rows-per-table 50000 --steps 30   # a quick look

Job: examples/configs/synthetic_criteo.config with every table's num_buckets = --rows-per-table
(weights + element-wise Adagrad state: 26 * R * 16 * 4 B * 2), 2 ranks on CPU over Gloo, data from
tools/gen_data/gen_data.py --kind criteo. Two runs of the same job:
  flash  tzrun --flash-checkpoint --max-restarts 1 ... tzrec_train --flash_checkpoint_steps K,
         train_config.save_checkpoints_steps K: each save goes into memory and tzrun's agent
         writes it to model_dir in the background
  disk   tzrun --max-restarts 1 ... tzrec_train with train_config.save_checkpoints_steps K: each
         save is written to model_dir by the ranks (fsync included)
In each, rank 1 is SIGKILLed right after the second save; tzrun restarts the group, which resumes
(--continue_train) from the flash checkpoint or from the disk one.
Figures: stall per save = the ms rank 0 prints on its "flash checkpoint ... (N ms)" /
"saved ... (N ms)" line (the whole collective save: every rank serialises and writes, rank 0
commits), median over the saves before the kill; crash -> first step = SIGKILL -> the first
progress line after the "restored" line (log_step_count_steps 1), which includes starting the
processes and the Gloo group; crash -> restored = SIGKILL -> the "restored" line. The step time
without a save (median of the progress lines' samples/s) is printed beside them.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "tools", "config"))
import pbtext  # noqa: E402 (tools/config/pbtext.py: .config text -> dict)

BIN = os.environ.get("TZRUN_BIN_DIR") or os.path.join(ROOT, "build", "bin")  # tzrun, tzrec_train
PROGRESS = re.compile(r"^step (\d+)/(\d+)\s+loss (\S+).*?samples/s (\S+)")
SAVE = re.compile(r"^tzrec_train: (?:flash checkpoint|saved) (\S+) \((?:(\d+) kB, )?(\d+) ms")


def sh(cmd, **kw):
    print("+", " ".join(map(str, cmd)), file=sys.stderr)
    return subprocess.run(list(map(str, cmd)), check=True, **kw)


def make_config(work: str, rows: int) -> str:
    cfg = pbtext.load(os.path.join(ROOT, "examples", "configs", "synthetic_criteo.config"))
    for f in cfg["feature_configs"]:
        for v in f.values():
            if isinstance(v, dict) and "num_buckets" in v:
                v["num_buckets"] = rows
    path = os.path.join(work, f"flash_bench_{rows}.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    return path


def rank_pid(marker: str, rank: int):
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
            with open(f"/proc/{d}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if cmd[0].endswith(b"tzrec_train") and marker.encode() in b" ".join(cmd) and \
                f"RANK={rank}".encode() in env:
            return int(d)
    return None


def run(kind: str, a, cfg: str, data: str, work: str) -> dict:
    md = os.path.join(work, f"model_{kind}")
    edit = {"train_config.num_steps": a.steps, "train_config.num_epochs": 0,
            "train_config.log_step_count_steps": 1,
            "train_config.save_checkpoints_steps": a.every,
            "data_config.batch_size": a.batch}
    cmd = [os.path.join(BIN, "tzrun"), "--standalone", "--nproc-per-node=2", "--max-restarts=1"]
    if kind == "flash":
        cmd.append("--flash-checkpoint")
    cmd += [os.path.join(BIN, "tzrec_train"), "--pipeline_config_path", cfg, "--model_dir", md,
            "--train_input_path", data, "--eval_input_path", data, "--edit_config_json", json.dumps(edit), "--continue_train"]
    if kind == "flash":
        cmd += ["--flash_checkpoint_steps", str(a.every)]
    print("+", " ".join(cmd), file=sys.stderr)
    env = dict(os.environ, PATH=f"{BIN}:{os.environ.get('PATH', '')}")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    saves, rates, kill_t, restored_t, first_t, kb = [], [], None, None, None, None
    for line in p.stdout:
        t = time.monotonic()
        m = SAVE.match(line)
        if m and kill_t is None:
            saves.append(int(m.group(3)))
            kb = int(m.group(2)) if m.group(2) else kb
            if len(saves) == 2:
                pid = rank_pid(md, 1)
                os.kill(pid, signal.SIGKILL)
                kill_t = time.monotonic()
        elif line.startswith("tzrec_train: restored ") and kill_t is not None:
            restored_t = t
            print("  " + line.strip(), file=sys.stderr)
        elif PROGRESS.match(line):
            if restored_t is not None and first_t is None:
                first_t = t
            elif kill_t is None:
                rates.append(float(PROGRESS.match(line).group(4)))
    rc = p.wait()
    if rc != 0 or first_t is None:
        raise SystemExit(f"{kind} run failed (exit {rc}, restored {restored_t}, first step {first_t})")
    final = os.path.join(md, f"model.ckpt-{a.steps}")
    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(final) for f in fs)
    samples_per_step = a.batch * 2
    return {"save_ms": statistics.median(saves), "saves": saves, "restored_s": restored_t - kill_t,
            "first_step_s": first_t - kill_t,
            "step_ms": 1000 * samples_per_step / statistics.median(rates[1:] or rates),
            "final_ckpt_mb": size / 1e6}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows-per-table", type=int, default=300000)
    ap.add_argument("--train-rows", type=int, default=60000)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "tzrec_flashbench"))
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    cfg = make_config(a.work, a.rows_per_table)
    data = os.path.join(a.work, f"criteo-{a.train_rows}-{a.rows_per_table}")
    if not os.path.isdir(data):
        sh([sys.executable, os.path.join(ROOT, "tools", "gen_data", "gen_data.py"), "--kind", "criteo",
            "--rows", a.train_rows, "--out", data, "--num-buckets", ",".join([str(a.rows_per_table)] * 26)])
    out = {}
    for kind in ("flash", "disk"):
        subprocess.run(["rm", "-rf", os.path.join(a.work, f"model_{kind}")], check=True)
        out[kind] = run(kind, a, cfg, os.path.join(data, "*.parquet"), a.work)
    f, d = out["flash"], out["disk"]
    print(f"state: {f['final_ckpt_mb']:.0f} MB a checkpoint (2 ranks, {a.rows_per_table} rows x 26 tables); "
          f"step without a save {f['step_ms']:.0f} ms (flash run) / {d['step_ms']:.0f} ms (disk run)")
    print(f"stall per save      flash {f['save_ms']:.0f} ms   disk {d['save_ms']:.0f} ms   "
          f"ratio {d['save_ms'] / max(f['save_ms'], 1):.1f}x   (saves {f['saves']} / {d['saves']})")
    print(f"crash -> restored   flash {f['restored_s']:.2f} s   disk {d['restored_s']:.2f} s")
    print(f"crash -> 1st step   flash {f['first_step_s']:.2f} s   disk {d['first_step_s']:.2f} s   "
          f"(steps lost: flash <= {a.every}, disk <= {a.every}; same K here)")
    print(json.dumps(out))


if __name__ == "__main__":
    main()

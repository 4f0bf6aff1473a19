#!/usr/bin/env python3
"""Driver of the sharded-EBC benchmark: STREAM-like copy bandwidth, TorchRec's sharded EBC
(when .venv-torchrec exists) and ours, tzrec_ebc_bench launched by tzrun (when built), on the
same table set (tables.py), batch, iterations and sharding, in one run.

  python3 tools/bench/embedding/run.py --budget-gib 1 --batch 4096 --iters 30 --warmup 5

Every command run is echoed to stderr; the result is a table on stdout:
  impl | lookups/s | GB/s | % of STREAM copy | ours/torchrec (lookups/s)
and, with --json-out FILE, every raw JSON result. Exit status: 0 when every side that could
run did, 1 when one failed (its error is printed), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, HERE)
import tables as table_set  # noqa: E402


def last_json_line(text: str) -> dict | None:
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return None
    return None


def run_json(name: str, cmd: list[str], env: dict, timeout: float) -> dict | None:
    print(f"run.py: [{name}] {shlex.join(cmd)}", file=sys.stderr, flush=True)
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"run.py: [{name}] did not finish within {timeout:.0f} s; lower --iters/--batch "
              f"or raise --timeout", file=sys.stderr)
        return None
    result = last_json_line(proc.stdout)
    if proc.returncode != 0 or result is None:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-25:])
        print(f"run.py: [{name}] exited {proc.returncode} "
              f"{'without a JSON line on stdout' if result is None else ''}; its last output:\n"
              f"{tail}", file=sys.stderr)
        return None
    return result


def fmt_rate(x: float) -> str:
    return f"{x / 1e6:,.2f} M" if x >= 1e5 else f"{x:,.0f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget-gib", type=float, default=1.0,
                    help="tables' weights + row-wise Adagrad state, all ranks (default 1)")
    ap.add_argument("--dim", type=int, default=64, help="embedding_dim (default 64)")
    ap.add_argument("--batch", type=int, default=4096, help="per-rank batch (default 4096)")
    ap.add_argument("--iters", type=int, default=30, help="timed iterations (default 30)")
    ap.add_argument("--warmup", type=int, default=5, help="warm-up iterations (default 5)")
    ap.add_argument("--sharding", default="table_wise",
                    choices=("table_wise", "column_wise", "data_parallel"))
    ap.add_argument("--nproc", type=int, default=2, help="ranks, and STREAM processes (default 2)")
    ap.add_argument("--threads", type=int, default=1,
                    help="OMP_NUM_THREADS for every rank of both sides (default 1)")
    ap.add_argument("--stream-mib", type=int, default=1024,
                    help="MiB per STREAM array (default 1024)")
    ap.add_argument("--stream-reps", type=int, default=10, help="STREAM rounds (best kept)")
    ap.add_argument("--torchrec-venv", default=os.path.join(ROOT, ".venv-torchrec"))
    ap.add_argument("--tzrun", default=os.path.join(ROOT, "build", "bin", "tzrun"))
    ap.add_argument("--bench", default=os.path.join(ROOT, "build", "bin", "tzrec_ebc_bench"),
                    help="our benchmark binary")
    ap.add_argument("--skip", action="append", default=[], choices=("stream", "torchrec", "tzrec"),
                    help="leave a side out (repeatable)")
    ap.add_argument("--tables-out", help="keep the table-set JSON here (default: a temp file)")
    ap.add_argument("--json-out", help="write all raw results here as a JSON list")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per side (default 900)")
    args = ap.parse_args()

    try:
        spec = table_set.build(args.budget_gib, args.dim, args.batch)
    except ValueError as e:
        print(f"run.py: {e}", file=sys.stderr)
        return 2
    summary = spec.pop("_summary")
    tables_path = args.tables_out or os.path.join(
        tempfile.mkdtemp(prefix="ebc-bench-"), "tables.json")
    with open(tables_path, "w") as f:
        json.dump(spec, f)
    print(f"run.py: tables {tables_path}: 26 tables, dim {args.dim}, {summary['total_rows']:,} "
          f"rows, {summary['total_bytes'] / table_set.GIB:.3f} GiB with Adagrad state; per-rank "
          f"batch {args.batch}, {args.warmup}+{args.iters} iterations, {args.sharding}, "
          f"{args.nproc} ranks", file=sys.stderr)

    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    common = ["--tables", tables_path, "--batch", str(args.batch), "--iters", str(args.iters),
              "--warmup", str(args.warmup), "--sharding", args.sharding]
    results: list[dict] = []
    failed = False

    stream = None
    if "stream" not in args.skip:
        stream = run_json("stream", [sys.executable, os.path.join(HERE, "stream_copy.py"),
                                     "--procs", str(args.nproc), "--mib", str(args.stream_mib),
                                     "--reps", str(args.stream_reps)], env, args.timeout)
        failed |= stream is None
        if stream:
            results.append(stream)

    torchrec = None
    torchrun = os.path.join(args.torchrec_venv, "bin", "torchrun")
    if "torchrec" in args.skip:
        pass
    elif not os.access(torchrun, os.X_OK):
        print(f"run.py: [torchrec] skipped: no {torchrun}; create it with "
              f"tools/bench/embedding/setup_torchrec.sh", file=sys.stderr)
    else:
        torchrec = run_json("torchrec", [torchrun, "--standalone",
                                         f"--nproc-per-node={args.nproc}",
                                         os.path.join(HERE, "torchrec_ebc.py"), *common],
                            env, args.timeout)
        failed |= torchrec is None
        if torchrec:
            results.append(torchrec)

    ours = None
    if "tzrec" in args.skip:
        pass
    elif not (os.access(args.bench, os.X_OK) and os.access(args.tzrun, os.X_OK)):
        print(f"run.py: [tzrec] skipped: {args.bench} or {args.tzrun} is not built "
              f"(cmake --build build --target tzrec_ebc_bench tzrun)", file=sys.stderr)
    else:
        ours = run_json("tzrec", [args.tzrun, "--standalone", f"--nproc-per-node={args.nproc}",
                                  "--no-python", args.bench, *common], env, args.timeout)
        failed |= ours is None
        if ours:
            ours.setdefault("impl", "tzrec")
            results.append(ours)

    rows = [("impl", "lookups/s", "GB/s", "% of STREAM copy", "ours/torchrec")]
    if stream:
        rows.append((f"stream copy ({stream['procs']} procs)", "-", f"{stream['gb_per_s']:.2f}",
                     "100%", "-"))
    for r in (torchrec, ours):
        if not r:
            continue
        pct = f"{100 * r['gb_per_s'] / stream['gb_per_s']:.1f}%" if stream else "-"
        ratio = (f"{r['lookups_per_s'] / torchrec['lookups_per_s']:.2f}x"
                 if r is ours and torchrec else "-")
        rows.append((r.get("impl", "?"), fmt_rate(r["lookups_per_s"]), f"{r['gb_per_s']:.3f}",
                     pct, ratio))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for i, row in enumerate(rows):
        print(" | ".join(cell.ljust(w) for cell, w in zip(row, widths)))
        if i == 0:
            print("-+-".join("-" * w for w in widths))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(results, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

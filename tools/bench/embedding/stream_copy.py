#!/usr/bin/env python3
"""STREAM-like "copy" memory bandwidth: P processes, each copying its own array of --mib MiB
(far larger than any cache) into another with numpy, all started together.

GB/s = (bytes read + bytes written) / seconds = 2 * P * array bytes / (last process's end -
first process's start, each timed by itself), best of --reps rounds (decimal GB, 1e9 bytes),
as STREAM reports Copy. Processes, not threads, so that the GIL plays no part; each is one
thread (numpy's copy is single-threaded).

Prints one JSON line: {"impl":"stream_copy","procs":P,"mib_per_array":M,"reps":R,
"gb_per_s":best,"gb_per_s_median":median}. Needs numpy (both venvs have it).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import sys
import time


def _worker(barrier, conn, n_bytes: int, reps: int) -> None:
    import numpy as np

    src = np.ones(n_bytes // 8, dtype=np.float64)  # touched: pages are really allocated
    dst = np.zeros_like(src)
    np.copyto(dst, src)  # warm-up: faults in every page of dst
    spans = []
    for _ in range(reps):
        barrier.wait()
        t0 = time.perf_counter()  # CLOCK_MONOTONIC: comparable across processes
        np.copyto(dst, src)
        spans.append((t0, time.perf_counter()))
    conn.send(spans)
    conn.close()


def measure(procs: int = 2, mib: int = 1024, reps: int = 10) -> dict:
    """A round lasts from the first process's start to the last one's end (their own clocks,
    not the parent's: with as many copiers as cores the parent would wake late)."""
    if procs < 1 or mib < 1 or reps < 1:
        raise ValueError(f"procs {procs}, mib {mib}, reps {reps}: all must be >= 1")
    n_bytes = mib << 20
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(procs)
    pipes = [ctx.Pipe(duplex=False) for _ in range(procs)]
    workers = [ctx.Process(target=_worker, args=(barrier, w, n_bytes, reps))
               for _, w in pipes]
    for w in workers:
        w.start()
    spans = []
    try:
        for r, _ in pipes:
            if not r.poll(600):
                raise RuntimeError("a copy process sent no timings within 600 s")
            spans.append(r.recv())
    except EOFError:
        pass  # reported below from the exit codes
    finally:
        for w in workers:
            w.join(timeout=60)
            if w.is_alive():
                w.kill()
    bad = [w.exitcode for w in workers if w.exitcode != 0]
    if bad or len(spans) != procs:
        raise RuntimeError(f"a copy process exited with {bad}; lower --mib if memory is short")
    rates = []
    for rnd in range(reps):
        start = min(s[rnd][0] for s in spans)
        end = max(s[rnd][1] for s in spans)
        rates.append(2 * procs * n_bytes / (end - start) / 1e9)
    return {"impl": "stream_copy", "procs": procs, "mib_per_array": mib, "reps": reps,
            "gb_per_s": max(rates), "gb_per_s_median": statistics.median(rates)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--procs", type=int, default=2, help="copying processes (default 2)")
    ap.add_argument("--mib", type=int, default=1024,
                    help="MiB per array; each process holds two (default 1024, past any host L3)")
    ap.add_argument("--reps", type=int, default=10, help="timed rounds, best is kept (default 10)")
    args = ap.parse_args()
    try:
        result = measure(args.procs, args.mib, args.reps)
    except (ValueError, RuntimeError) as e:
        print(f"stream_copy.py: {e}", file=sys.stderr)
        return 2
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Protocol check of tzrun_store_bench's --scale rendezvous with real torch clients.

One rendezvous of N clients against one server: K of them are real
``torch.distributed.TCPStore`` clients (threads of this process), the other N - K are the C++
loader's raw-protocol clients (``tzrun_store_bench --attach PORT --attach-first K``). Every
client ADDs the same counter, the one that sees N SETs "done", everyone WAITs on "done" and
GETs it (torch's ``store.get`` is WAIT + GET). It completes only if the loader's bytes mean to
the server what torch's do: same keys (TCPStore's "/" prefix), same handshake, same replies.
Afterwards a torch client reads the counter (N) and the key count (2). Run against both
``tzrun store`` and PyTorch's own libuv server (by default with the bench's numeric-getnameinfo
shim, ``torch-nodns``, as its reverse-DNS lookups stall where DNS drops queries), e.g.:

    .venv/bin/python tools/bench/store/scale_check.py --bin-dir build/bin --clients 4000 --torch-clients 64
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime
import os
import re
import subprocess
import sys
import time

import torch.distributed as dist

TORCH_SERVER = r"""
import sys, datetime, torch.distributed as dist
s = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False, use_libuv=True,
                  timeout=datetime.timedelta(seconds=300))
print(f"torch store: listening on 127.0.0.1:{s.port}", flush=True)
sys.stdin.read()
"""


def start_server(kind: str, bin_dir: str) -> tuple[subprocess.Popen, int]:
    env = dict(os.environ)
    if kind == "tzrun":
        argv = [os.path.join(bin_dir, "tzrun"), "store", "--host", "127.0.0.1", "--port", "0",
                "--log-level", "warning"]
    else:
        argv = [sys.executable, "-c", TORCH_SERVER]
        # torch's server calls getnameinfo() per connection; where reverse DNS drops queries
        # each stalls it for seconds (tools/bench/store/README.md, "torch vs torch-nodns").
        shim = os.path.join(bin_dir, "..", "lib", "libtzrun_bench_numeric_getnameinfo.so")
        if kind == "torch-nodns":
            env["LD_PRELOAD"] = shim
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)
    deadline = time.monotonic() + 120
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        m = re.search(r"listening on \S+:(\d+)", line)
        if m:
            return proc, int(m.group(1))
    proc.kill()
    raise RuntimeError(f"{kind} server printed no ready line")


def torch_client(port: int, n: int, prefix: str) -> int:
    """One rank of the rendezvous, the way c10d uses TCPStore; returns its ADD result."""
    s = dist.TCPStore("127.0.0.1", port, is_master=False, wait_for_workers=False,
                      timeout=datetime.timedelta(seconds=60))
    got = s.add(prefix + "count", 1)
    if got == n:
        s.set(prefix + "done", "1")
    value = s.get(prefix + "done")  # WAIT + GET
    if value != b"1":
        raise AssertionError(f"GET done returned {value!r}")
    return got


def check(kind: str, args: argparse.Namespace) -> bool:
    proc, port = start_server(kind, args.bin_dir)
    tag = f"check{os.getpid()}{kind}"
    prefix = f"bench/scale{tag}-0/"  # the loader's keys are "/" + this (TCPStore's prefix)
    try:
        t0 = time.monotonic()
        loader = subprocess.Popen(
            [os.path.join(args.bin_dir, "tzrun_store_bench"), "--attach", str(port), "--scale",
             str(args.clients), "--attach-first", str(args.torch_clients), "--tag", tag,
             "--procs", str(args.procs), "--scale-timeout", "120"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        with cf.ThreadPoolExecutor(args.torch_clients) as pool:
            adds = list(pool.map(lambda _: torch_client(port, args.clients, prefix),
                                 range(args.torch_clients)))
        out, _ = loader.communicate(timeout=180)
        elapsed = time.monotonic() - t0
        probe = dist.TCPStore("127.0.0.1", port, is_master=False, wait_for_workers=False,
                              timeout=datetime.timedelta(seconds=30))
        count = int(probe.get(prefix + "count"))
        keys = probe.num_keys()
        ok = loader.returncode == 0 and count == args.clients and keys == 2
        summary = out.strip().splitlines()[-1] if out.strip() else "(no output)"
        print(f"[{kind}] {'ok' if ok else 'FAILED'}: {args.torch_clients} torch clients "
              f"(ADD results {min(adds)}..{max(adds)}) + {args.clients - args.torch_clients} "
              f"loader clients in {elapsed:.2f} s; counter {count}, keys {keys}\n"
              f"[{kind}] loader: {summary}")
        return ok
    finally:
        if proc.stdin:
            proc.stdin.close()
        proc.terminate()
        proc.wait(timeout=30)


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(os.path.dirname(here)))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin-dir", default=os.path.join(root, "build", "bin"))
    ap.add_argument("--servers", default="tzrun,torch-nodns",
                    help="tzrun, torch (libuv) and/or torch-nodns (the same, numeric getnameinfo)")
    ap.add_argument("--clients", type=int, default=4000, help="N, all clients")
    ap.add_argument("--torch-clients", type=int, default=64, help="K of them torch TCPStore")
    ap.add_argument("--procs", type=int, default=2, help="loader processes")
    args = ap.parse_args()
    results = [check(kind, args) for kind in args.servers.split(",")]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())

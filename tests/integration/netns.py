"""Multi-host harness: N "hosts" as Linux network namespaces on a private virtual switch.

Layout of one cluster (everything lives in namespaces; nothing is added to the root
namespace, so no traffic can leave the machine):

    netns tzn-<pid>-<cid>-sw      bridge "br0" with ports p0..pN-1 (no IP address)
    netns tzn-<pid>-<cid>-nodeK   "eth0" (veth peer of pK) = 10.213.<cid>.<K+1>/24, lo up

Each host also gets its own hostname (a UTS namespace per command, see Host.wrap) and a
hosts file (/etc/netns/<ns>/hosts, which `ip netns exec` bind-mounts over /etc/hosts)
that maps every host name of the cluster to its IP, so getfqdn()/gethostname() based
code (c10d node descriptors, gloo's default device) sees a real multi-host setup.
Hosts share the filesystem with the test (tmp dirs work across hosts).

Faults: Host.kill()/stop()/cont() signal every process in the host's namespace (a node
dying or freezing as a whole); Host.link_down()/link_up() unplug the host's switch port.

Cleanup: Cluster.close() (call it from a fixture finalizer) kills every process in the
cluster's namespaces and deletes them with their hosts files. sweep_leftovers() removes
namespaces left by earlier crashed runs: the owning test process id is part of every
name, and only namespaces whose owner is gone are removed, so parallel runs are safe.

unavailable_reason() says why namespaces cannot be used here (not root, no
CAP_NET_ADMIN, `ip`/`unshare`/`hostname` missing); tests skip with that message.
"""
from __future__ import annotations

import contextlib
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import time
from typing import Iterable, Sequence

PREFIX = "tzn"
NETNS_ETC = pathlib.Path("/etc/netns")
_NAME_RE = re.compile(rf"^{PREFIX}-(\d+)-(\d+)-(\w+)$")
_cluster_ids = iter(range(1, 250))


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and proc.returncode != 0:
        raise RuntimeError(f"`ip {' '.join(args)}` failed (rc={proc.returncode}): "
                           f"{proc.stderr.strip()}; the namespace harness needs root or "
                           f"CAP_NET_ADMIN+CAP_SYS_ADMIN")
    return proc


def unavailable_reason() -> str | None:
    """None if network namespaces work here, else a message for pytest.skip."""
    for tool in ("ip", "unshare", "hostname"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed (iproute2/util-linux/hostname needed)"
    if os.geteuid() != 0:
        return "network-namespace tests need root (CAP_NET_ADMIN, CAP_SYS_ADMIN); CI runs as root"
    probe = f"{PREFIX}-{os.getpid()}-0-probe"
    proc = _ip("netns", "add", probe, check=False)
    if proc.returncode != 0:
        return f"cannot create a network namespace (`ip netns add`): {proc.stderr.strip()}"
    try:
        run = subprocess.run(["ip", "netns", "exec", probe, "unshare", "--uts", "--",
                              "hostname", "tzn-probe"], capture_output=True, text=True,
                             timeout=30)
        if run.returncode != 0:
            return f"cannot run in a namespace (`ip netns exec` + `unshare --uts`): " \
                   f"{run.stderr.strip()}"
    finally:
        _ip("netns", "del", probe, check=False)
    return None


def netns_pids(ns: str) -> list[int]:
    proc = _ip("netns", "pids", ns, check=False)
    return [int(p) for p in proc.stdout.split()] if proc.returncode == 0 else []


def _signal_pids(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def _destroy_netns(ns: str) -> None:
    """SIGKILL everything inside, wait a little for it to go, delete ns and hosts file."""
    for _ in range(50):
        pids = netns_pids(ns)
        if not pids:
            break
        _signal_pids(pids, signal.SIGKILL)
        _signal_pids(pids, signal.SIGCONT)
        time.sleep(0.05)
    _ip("netns", "del", ns, check=False)
    shutil.rmtree(NETNS_ETC / ns, ignore_errors=True)


def sweep_leftovers() -> list[str]:
    """Delete tzn-* namespaces (and /etc/netns/tzn-* dirs) whose owner process is gone."""
    removed = []
    names = {line.split()[0] for line in _ip("netns", "list", check=False).stdout.splitlines()
             if line.strip()}
    if NETNS_ETC.is_dir():
        names |= {p.name for p in NETNS_ETC.iterdir()}
    for ns in sorted(names):
        m = _NAME_RE.match(ns)
        if m and not _alive(int(m.group(1))):
            _destroy_netns(ns)
            removed.append(ns)
    with contextlib.suppress(OSError):
        if NETNS_ETC.is_dir() and not any(NETNS_ETC.iterdir()):
            NETNS_ETC.rmdir()
    return removed


class Host:
    """One simulated machine: a network namespace with its own hostname and IP."""

    def __init__(self, cluster: "Cluster", index: int, name: str, ns: str, ip: str):
        self.cluster, self.index, self.name, self.ns, self.ip = cluster, index, name, ns, ip
        self.port = f"p{index}"  # the switch-side interface
        self.procs: list[subprocess.Popen] = []

    def __repr__(self) -> str:
        return f"Host({self.name}, {self.ip})"

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """argv run inside this host: its netns, its /etc/hosts, its own hostname."""
        return ["ip", "netns", "exec", self.ns, "unshare", "--uts", "--", "sh", "-c",
                'hostname "$0" && exec "$@"', self.name, *map(str, argv)]

    def popen(self, argv: Sequence[str], *, env: dict, log: pathlib.Path | None = None,
              **kw) -> subprocess.Popen:
        """Start argv inside the host (the Popen pid is argv's own process).

        Output goes to `log` (appended) when given, so long runs never block on pipes."""
        if log is not None:
            out = open(log, "ab")  # noqa: SIM115 - closed with the process below
            kw.setdefault("stdout", out)
            kw.setdefault("stderr", subprocess.STDOUT)
        proc = subprocess.Popen(self.wrap(argv), env=env, stdin=subprocess.DEVNULL, **kw)
        proc.log = log
        if log is not None:
            out.close()  # the child holds its own descriptor
        self.procs.append(proc)
        return proc

    def run(self, argv: Sequence[str], *, env: dict | None = None, timeout: float = 60,
            **kw) -> subprocess.CompletedProcess:
        return subprocess.run(self.wrap(argv), env=env, capture_output=True, text=True,
                              timeout=timeout, **kw)

    # --- faults -----------------------------------------------------------------------
    def pids(self) -> list[int]:
        return netns_pids(self.ns)

    def signal_all(self, sig: int) -> list[int]:
        """Send sig to every process in this host (agent and workers alike)."""
        pids = self.pids()
        _signal_pids(pids, sig)
        return pids

    def kill(self) -> None:
        """The machine dies: SIGKILL every process in it (peers see their sockets close)."""
        self.signal_all(signal.SIGKILL)

    def stop(self) -> None:
        """The machine freezes: SIGSTOP every process (sockets stay open, no heartbeats)."""
        self.signal_all(signal.SIGSTOP)

    def cont(self) -> None:
        self.signal_all(signal.SIGCONT)

    def link_down(self) -> None:
        """Unplug the cable at the switch: packets to and from this host are dropped."""
        _ip("-n", self.cluster.switch, "link", "set", self.port, "down")

    def link_up(self) -> None:
        _ip("-n", self.cluster.switch, "link", "set", self.port, "up")


class Cluster:
    """N hosts node0..node{N-1} on one virtual switch; use as a context manager."""

    def __init__(self, n: int, *, names: Sequence[str] | None = None):
        self.cid = next(_cluster_ids)
        self.tag = f"{PREFIX}-{os.getpid()}-{self.cid}"
        self.switch = f"{self.tag}-sw"
        self.subnet = f"10.213.{self.cid}"
        self.hosts: list[Host] = []
        names = list(names or [f"node{i}" for i in range(n)])
        assert len(names) == n and all(re.fullmatch(r"[a-z][a-z0-9]*", x) for x in names)
        try:
            _ip("netns", "add", self.switch)
            _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.switch, "link", "set", "br0", "up")
            for i, name in enumerate(names):
                host = Host(self, i, name, f"{self.tag}-{name}", f"{self.subnet}.{i + 1}")
                _ip("netns", "add", host.ns)
                self.hosts.append(host)
                _ip("link", "add", "eth0", "netns", host.ns, "type", "veth", "peer", "name",
                    host.port, "netns", self.switch)
                _ip("-n", self.switch, "link", "set", host.port, "master", "br0")
                _ip("-n", self.switch, "link", "set", host.port, "up")
                _ip("-n", host.ns, "link", "set", "lo", "up")
                _ip("-n", host.ns, "addr", "add", f"{host.ip}/24", "dev", "eth0")
                _ip("-n", host.ns, "link", "set", "eth0", "up")
            hosts_file = "127.0.0.1\tlocalhost\n::1\tlocalhost\n" + "".join(
                f"{h.ip}\t{h.name}\n" for h in self.hosts)
            for h in self.hosts:
                (NETNS_ETC / h.ns).mkdir(parents=True, exist_ok=True)
                (NETNS_ETC / h.ns / "hosts").write_text(hosts_file)
        except BaseException:
            self.close()
            raise

    def __getitem__(self, i: int) -> Host:
        return self.hosts[i]

    def __iter__(self):
        return iter(self.hosts)

    def __len__(self) -> int:
        return len(self.hosts)

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Kill every process of the cluster and delete its namespaces (idempotent)."""
        for h in self.hosts:
            h.signal_all(signal.SIGKILL)
        for h in self.hosts:
            for p in h.procs:
                with contextlib.suppress(Exception):
                    p.kill()
                with contextlib.suppress(Exception):
                    p.wait(timeout=10)
        for h in self.hosts:
            _destroy_netns(h.ns)
        self.hosts = []
        _destroy_netns(self.switch)
        with contextlib.suppress(OSError):
            NETNS_ETC.rmdir()  # only if empty


# ---------------------------------------------------------------------------------------
# Helpers shared by the launcher tests (test_multinode_*.py)
# ---------------------------------------------------------------------------------------

#: Worker for multi-node tests (torch + stdlib). usage: mn_worker.py OUTDIR MODE
#: Every start appends one JSON line to OUTDIR/starts.jsonl: host (hostname), the
#: torchrun env (rank, world, group_rank, group_world, local_rank, local_world, restart,
#: master, run_id), pid and time. MODE:
#:   once   gloo init_process_group + one all_reduce of (RANK+1), record it, exit 0
#:   loop   gloo all_reduce of (RANK+1) in a loop; the first result of every start is
#:          recorded to OUTDIR/sums.jsonl; when OUTDIR/stop exists on any rank, all ranks
#:          leave together (the flag is part of the reduction) and exit 0
#:   hold   like once, then (process group destroyed, so peers may come and go) sleep
#:          until OUTDIR/stop exists, exit 0
#:   sleep  no torch; sleep until OUTDIR/stop exists, exit 0
#: The collective timeout (seconds) is MN_TIMEOUT (default 15): a dead or frozen peer
#: makes the survivors' collectives fail within that time, so their agents restart.
MN_WORKER = r'''
import datetime, json, os, socket, sys, time

out, mode = sys.argv[1], sys.argv[2]
e = os.environ


def append(name, rec):
    with open(os.path.join(out, name), "a") as f:
        f.write(json.dumps(rec) + "\n")


rec = dict(host=socket.gethostname(), rank=int(e["RANK"]), world=int(e["WORLD_SIZE"]),
           group_rank=int(e["GROUP_RANK"]), group_world=int(e["GROUP_WORLD_SIZE"]),
           local_rank=int(e["LOCAL_RANK"]), local_world=int(e["LOCAL_WORLD_SIZE"]),
           restart=int(e["TORCHELASTIC_RESTART_COUNT"]),
           master=e["MASTER_ADDR"] + ":" + e["MASTER_PORT"],
           run_id=e.get("TORCHELASTIC_RUN_ID"), pid=os.getpid(), t=time.time())
append("starts.jsonl", rec)
stop = os.path.join(out, "stop")
if mode == "sleep":
    while not os.path.exists(stop):
        time.sleep(0.1)
    sys.exit(0)

import torch
import torch.distributed as dist

dist.init_process_group(
    "gloo", timeout=datetime.timedelta(seconds=float(e.get("MN_TIMEOUT", "15"))))
assert dist.get_rank() == rec["rank"] and dist.get_world_size() == rec["world"]
first = True
while True:
    t = torch.tensor([float(rec["rank"] + 1), 1.0 if os.path.exists(stop) else 0.0, 1.0])
    dist.all_reduce(t)
    if first:
        append("sums.jsonl", dict(rec, sum=t[0].item(), n=int(t[2].item()), t=time.time()))
        first = False
    if mode in ("once", "hold") or t[1].item() > 0:
        break
    time.sleep(0.05)
dist.barrier()
dist.destroy_process_group()
while mode == "hold" and not os.path.exists(stop):
    time.sleep(0.1)
'''


def write_worker(directory: pathlib.Path) -> pathlib.Path:
    path = pathlib.Path(directory) / "mn_worker.py"
    path.write_text(MN_WORKER)
    return path


def read_jsonl(path: pathlib.Path) -> list[dict]:
    if not path.exists():
        return []
    recs = []
    for line in path.read_text().splitlines():
        with contextlib.suppress(ValueError):  # a line still being written
            recs.append(json.loads(line))
    return recs


def clean_env(venv_bin: str, **extra: str) -> dict:
    """The test's environment minus launcher/platform variables, venv python first in PATH."""
    drop = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "GROUP_RANK",
            "NPROC_PER_NODE", "LOCAL_WORLD_SIZE", "NODE_RANK"}
    env = {k: v for k, v in os.environ.items()
           if k not in drop and not k.startswith(("PET_", "TORCHELASTIC_", "SLURM_", "OMPI_",
                                                   "PMI_", "KUBERNETES_"))}
    env["PATH"] = venv_bin + os.pathsep + env.get("PATH", "/usr/bin:/bin")
    env.setdefault("OMP_NUM_THREADS", "1")
    env.update(extra)
    return env


def wait_until(pred, timeout: float, what: str, diag=lambda: "") -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}\n{diag()}")


def wait_exit(proc: subprocess.Popen, timeout: float, diag=lambda: "") -> int:
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"agent pid {proc.pid} still running after {timeout:.0f}s "
                             f"(it should have exited)\n{diag()}") from None


def log_tails(paths: Iterable[pathlib.Path], chars: int = 3000) -> str:
    parts = []
    for p in paths:
        p = pathlib.Path(p)
        text = p.read_text(errors="replace") if p.exists() else "<missing>"
        parts.append(f"----- {p.name} (last {chars} chars) -----\n{text[-chars:]}")
    return "\n".join(parts)


_reason_cache: list = []


def skip_reason() -> str | None:
    """unavailable_reason(), computed once per process."""
    if not _reason_cache:
        _reason_cache.append(unavailable_reason())
    return _reason_cache[0]


def cluster_fixture():
    """Body of a pytest fixture: yields make(n) -> Cluster; every cluster is torn down.

    Skips the test (with the reason) where namespaces are unavailable; removes leftovers
    of earlier crashed runs first."""
    import pytest  # only the tests import this module

    reason = skip_reason()
    if reason:
        pytest.skip(f"network namespaces unavailable: {reason}")
    sweep_leftovers()
    clusters: list[Cluster] = []

    def make(n: int, **kw) -> Cluster:
        c = Cluster(n, **kw)
        clusters.append(c)
        return c

    try:
        yield make
    finally:
        for c in clusters:
            c.close()

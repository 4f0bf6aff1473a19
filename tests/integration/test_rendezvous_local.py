"""Multi-node rendezvous end to end on one machine: 2-3 `tzrun` agents on 127.0.0.1, told
apart by --local-addr (127.0.0.2, .3, .4: the whole 127/8 is loopback, so workers can reach
a worker store published under any of them).

- static, 2 nodes x 2 workers (heterogeneous variant too), real torch gloo all_reduce;
- static job-wide restart: one node's worker fails, both nodes restart with the same
  TORCHELASTIC_RESTART_COUNT (every node spends a restart); with no restarts left the other node stops with its code;
- c10d 2:3: a third agent joining later scales everybody up to a 3-node world without
  spending restarts;
- c10d: a SIGKILLed node (agent + workers) -> the survivors restart with the smaller world;
- c10d: the agent hosting the rendezvous store is SIGKILLed -> the others exit 125 fast.

The network-namespace tests (test_multinode_*.py) cover real multi-host setups.
"""
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from conftest import binary, free_port

VENV_BIN = str(pathlib.Path(sys.executable).parent)
ALLREDUCE = pathlib.Path(__file__).parent / "workers" / "allreduce.py"
CONF = ("join_timeout=60,last_call_timeout=1,keep_alive_interval=1,keep_alive_max_attempt=3,"
        "read_timeout=10,close_timeout=10")
INFRA_EXIT = 125

# A torch worker that records every start and loops on a gloo all_reduce until OUT/stop
# exists; the stop decision itself is all-reduced so every rank leaves in the same step.
LOOP_WORKER = r'''
import datetime, json, os, sys, time
import torch, torch.distributed as dist
out = sys.argv[1]
env = {k: os.environ[k] for k in ("RANK", "WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
                                  "TORCHELASTIC_RESTART_COUNT", "MASTER_ADDR", "MASTER_PORT")}
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
t = torch.tensor([1.0])
dist.all_reduce(t)
with open(os.path.join(out, "formed.jsonl"), "a") as f:
    f.write(json.dumps({**env, "sum": t.item()}) + "\n")
while True:
    s = torch.tensor([1.0 if os.path.exists(os.path.join(out, "stop")) else 0.0])
    dist.all_reduce(s, op=dist.ReduceOp.MAX)
    if s.item() > 0:
        break
    time.sleep(0.1)
dist.barrier()
dist.destroy_process_group()
'''

# Torch worker for the restart scenarios: every attempt all-reduces; in the first attempt
# the worker with RANK == FAIL_RANK exits 3 after the all_reduce, the others would sleep.
RESTART_WORKER = r'''
import datetime, os, sys, time
import torch, torch.distributed as dist
out, fail_rank = sys.argv[1], int(sys.argv[2])
attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
t = torch.tensor([1.0])
dist.all_reduce(t)
rank = dist.get_rank()
with open(os.path.join(out, "starts.txt"), "a") as f:
    f.write(f"{os.environ['GROUP_RANK']} {attempt} {rank} {t.item():.0f}\n")
if attempt == 0:
    if rank == fail_rank:
        sys.exit(3)
    time.sleep(60)
dist.barrier()
dist.destroy_process_group()
'''

# Stdlib worker for the static restart scenarios (starts in milliseconds).
STATIC_WORKER = r'''
import os, sys, time
out = sys.argv[1]
g, r = os.environ["GROUP_RANK"], os.environ["TORCHELASTIC_RESTART_COUNT"]
with open(os.path.join(out, "starts.txt"), "a") as f:
    f.write(f"{g} {r} {os.environ['RANK']} {os.environ['WORLD_SIZE']}\n")
fail_attempts = int(sys.argv[2])
if g == "1" and int(r) < fail_attempts:
    time.sleep(1.0)
    sys.exit(3)
time.sleep(30.0 if int(r) < fail_attempts else 0.5)
'''


def env_for(**extra):
    env = dict(os.environ)
    env["PATH"] = VENV_BIN + os.pathsep + env.get("PATH", "/usr/bin:/bin")
    env.setdefault("LOGLEVEL", "info")
    env.pop("PYTHON_EXEC", None)
    env.update(extra)
    return env


class Agent:
    def __init__(self, argv, log: pathlib.Path):
        self.log_path = log
        self.log = open(log, "w")
        self.proc = subprocess.Popen([binary("tzrun"), *argv], env=env_for(),
                                     stdout=self.log, stderr=subprocess.STDOUT, text=True)

    def wait(self, timeout):
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self.log.flush()

    def text(self):
        self.log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.fixture
def agents():
    started = []

    def start(argv, log):
        a = Agent(argv, log)
        started.append(a)
        return a

    yield start
    for a in started:
        a.stop()


def logs(*agents_):
    return "\n".join(f"===== agent {i} =====\n{a.text()[-6000:]}" for i, a in enumerate(agents_))


def wait_for(pred, timeout, what, *agents_):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        if any(a.proc.poll() is not None for a in agents_):
            break
        time.sleep(0.1)
    assert pred(), f"timed out waiting for {what}\n{logs(*agents_)}"


def formed(out: pathlib.Path):
    p = out / "formed.jsonl"
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


def worlds(out: pathlib.Path, size: int):
    return [f for f in formed(out) if int(f["WORLD_SIZE"]) == size]


# --------------------------------------------------------------------------------------
# static


@pytest.mark.parametrize("nproc", [(2, 2), (1, 3)], ids=["2x2", "1+3"])
def test_static_two_nodes_gloo_all_reduce(tmp_path, agents, nproc):
    port = free_port()
    common = ["--nnodes=2", f"--master-port={port}", "--master-addr=127.0.0.1"]
    a1 = agents([*common, "--node-rank=1", f"--nproc-per-node={nproc[1]}", str(ALLREDUCE),
                 str(tmp_path)], tmp_path / "n1.log")
    time.sleep(0.5)  # node 1 first: it must retry until node 0 hosts the store
    a0 = agents([*common, "--node-rank=0", f"--nproc-per-node={nproc[0]}", str(ALLREDUCE),
                 str(tmp_path)], tmp_path / "n0.log")
    assert a0.wait(180) == 0, logs(a0, a1)
    assert a1.wait(60) == 0, logs(a0, a1)
    world = sum(nproc)
    expect = world * (world + 1) / 2
    for rank in range(world):
        value, seen_world = (tmp_path / f"sum{rank}.txt").read_text().split()
        assert float(value) == expect and int(seen_world) == world


@pytest.mark.parametrize("nnodes", [1, 2])
def test_static_restart_with_gloo_is_job_wide_and_gets_a_clean_store(tmp_path, agents, nnodes):
    """One worker fails after its first all_reduce: every node restarts with the same
    TORCHELASTIC_RESTART_COUNT and the restarted gloo group forms (torchrun 2.11 reuses the
    store with the old workers' keys and its gloo restarts fail)."""
    port = free_port()
    script = tmp_path / "w.py"
    script.write_text(RESTART_WORKER)
    nproc = 2 if nnodes == 1 else 1
    common = [f"--nnodes={nnodes}", f"--master-port={port}", "--max-restarts=2",
              f"--nproc-per-node={nproc}"]
    a = [agents([*common, f"--node-rank={r}", str(script), str(tmp_path), "1"],
                tmp_path / f"n{r}.log") for r in range(nnodes)]
    t0 = time.monotonic()
    for x in a:
        assert x.wait(150) == 0, logs(*a)
    # The surviving first-attempt worker would sleep 60 s: it was stopped by the restart.
    assert time.monotonic() - t0 < 55, logs(*a)
    starts = sorted(tuple(line.split()) for line in
                    (tmp_path / "starts.txt").read_text().splitlines())
    # (group_rank, restart_count, rank, all_reduce sum == world size)
    groups = [0, 0] if nnodes == 1 else [0, 1]
    assert starts == sorted([(str(groups[r]), str(attempt), str(r), "2")
                             for attempt in (0, 1) for r in (0, 1)]), starts


def test_static_final_failure_stops_the_other_node_with_its_exit_code(tmp_path, agents):
    port = free_port()
    script = tmp_path / "w.py"
    script.write_text(STATIC_WORKER)
    common = ["--nnodes=2", f"--master-port={port}", "--nproc-per-node=1"]
    a = [agents([*common, f"--node-rank={r}", str(script), str(tmp_path), "5"],
                tmp_path / f"n{r}.log") for r in (0, 1)]
    t0 = time.monotonic()
    assert a[1].wait(120) == 3, logs(*a)
    assert a[0].wait(60) == 3, logs(*a)
    assert time.monotonic() - t0 < 25, logs(*a)
    assert "node 1 failed for good (exit code 3)" in a[0].text(), logs(*a)
    assert "Root Cause" in a[1].text(), logs(*a)


# --------------------------------------------------------------------------------------
# c10d


def c10d_args(port, addr, out, worker, nnodes="2:3", restarts=0, extra_conf=""):
    return [f"--nnodes={nnodes}", "--nproc-per-node=1", "--rdzv-backend=c10d",
            f"--rdzv-endpoint=127.0.0.1:{port}", "--rdzv-id=local-job",
            f"--rdzv-conf={CONF}{extra_conf}", f"--local-addr={addr}",
            f"--max-restarts={restarts}", str(worker), str(out)]


def test_c10d_late_third_node_scales_up_without_spending_restarts(tmp_path, agents):
    port = free_port()
    worker = tmp_path / "loop.py"
    worker.write_text(LOOP_WORKER)
    a = agents(c10d_args(port, "127.0.0.2", tmp_path, worker), tmp_path / "a.log")
    time.sleep(0.3)  # a hosts the rendezvous store
    b = agents(c10d_args(port, "127.0.0.3", tmp_path, worker), tmp_path / "b.log")
    wait_for(lambda: len(worlds(tmp_path, 2)) == 2, 150, "a 2-node world", a, b)
    first = worlds(tmp_path, 2)
    assert sorted(f["GROUP_RANK"] for f in first) == ["0", "1"]
    # Ranks follow the sorted --local-addr: 127.0.0.2 is node 0 and hosts the worker store.
    assert {f["MASTER_ADDR"] for f in first} == {"127.0.0.2"}
    c = agents(c10d_args(port, "127.0.0.4", tmp_path, worker), tmp_path / "c.log")
    wait_for(lambda: len(worlds(tmp_path, 3)) == 3, 150, "the 3-node world", a, b, c)
    third = worlds(tmp_path, 3)
    assert sorted(f["GROUP_RANK"] for f in third) == ["0", "1", "2"]
    assert {f["TORCHELASTIC_RESTART_COUNT"] for f in third} == {"0"}
    assert all(f["sum"] == 3.0 for f in third)
    (tmp_path / "stop").touch()
    for x in (a, b, c):
        assert x.wait(60) == 0, logs(a, b, c)
    assert "waiting to join" in a.text(), logs(a)
    # The late node said why it waited (torchrun's agent prints nothing there).
    assert "is waiting in the rendezvous 'local-job'" in c.text(), logs(c)
    assert "joins the next round" in c.text(), logs(c)


def test_c10d_killed_node_survivors_restart_with_smaller_world(tmp_path, agents):
    port = free_port()
    worker = tmp_path / "loop.py"
    worker.write_text(LOOP_WORKER)
    a = agents(c10d_args(port, "127.0.0.2", tmp_path, worker, restarts=3,
                         extra_conf=",last_call_timeout=5"), tmp_path / "a.log")
    time.sleep(0.3)
    b = agents(c10d_args(port, "127.0.0.3", tmp_path, worker, restarts=3,
                         extra_conf=",last_call_timeout=5"), tmp_path / "b.log")
    c = agents(c10d_args(port, "127.0.0.4", tmp_path, worker, restarts=3,
                         extra_conf=",last_call_timeout=5"), tmp_path / "c.log")
    wait_for(lambda: len(worlds(tmp_path, 3)) == 3, 150, "a 3-node world", a, b, c)
    c.proc.send_signal(signal.SIGKILL)  # agent and (through its guardian) its workers
    c.proc.wait()
    wait_for(lambda: len(worlds(tmp_path, 2)) == 2, 150, "the survivors' 2-node world", a, b)
    second = worlds(tmp_path, 2)
    assert sorted(f["GROUP_RANK"] for f in second) == ["0", "1"]
    # TORCHELASTIC_RESTART_COUNT is each agent's own failure restarts (torchrun): a survivor
    # whose gloo worker failed spent one, one that saw the membership change first did not.
    # The restarted group forms either way (a fresh workers' store per round, no per-attempt
    # key prefix in torch 2.11).
    assert {f["TORCHELASTIC_RESTART_COUNT"] for f in second} <= {"0", "1"}, second
    (tmp_path / "stop").touch()
    assert a.wait(60) == 0, logs(a, b)
    assert b.wait(60) == 0, logs(a, b)


def test_c10d_losing_the_store_host_fails_fast(tmp_path, agents):
    port = free_port()
    argv = lambda addr: [  # noqa: E731
        "--nnodes=2", "--nproc-per-node=1", "--rdzv-backend=c10d",
        f"--rdzv-endpoint=127.0.0.1:{port}", f"--rdzv-conf={CONF}", f"--local-addr={addr}",
        "--no-python", "sleep", "120"]
    host = agents(argv("127.0.0.2"), tmp_path / "host.log")
    time.sleep(0.3)
    other = agents(argv("127.0.0.3"), tmp_path / "other.log")
    wait_for(lambda: "started worker" in other.text() and "started worker" in host.text(), 60,
             "both nodes running", host, other)
    t0 = time.monotonic()
    host.proc.send_signal(signal.SIGKILL)
    assert other.wait(60) == INFRA_EXIT, logs(host, other)
    assert time.monotonic() - t0 < 30, logs(other)
    assert "rendezvous store" in other.text(), logs(other)


@pytest.mark.needs_torchrun
@pytest.mark.parametrize("host", ["tzrun", "torchrun"])
def test_c10d_torchrun_and_tzrun_agents_share_one_rendezvous(tmp_path, agents, host):
    """The c10d state is torchrun's (base64 pickle under torch.rendezvous.<run_id>, its null
    sentinel), so a torchrun agent and a tzrun agent form one world; either one hosts the
    rendezvous store (the first to bind the endpoint), and the node with the lower
    --local-addr is rank 0 and hosts the workers' store."""
    if not os.access(os.path.join(VENV_BIN, "torchrun"), os.X_OK):
        pytest.skip("no torchrun in the venv (scripts/setup.sh installs torch)")
    port = free_port()
    tz_addr, tr_addr = ("127.0.0.2", "127.0.0.3") if host == "tzrun" else ("127.0.0.3",
                                                                         "127.0.0.2")
    args = lambda addr: c10d_args(port, addr, tmp_path, ALLREDUCE, nnodes="2")  # noqa: E731
    run_beside_torchrun(tmp_path, agents, args, tz_addr, tr_addr, torchrun_first=host != "tzrun")


def run_beside_torchrun(tmp_path, agents, args, tz_addr, tr_addr, torchrun_first):
    """Starts a tzrun agent (args(tz_addr)) and the venv's torchrun (args(tr_addr)) in the given
    order on ALLREDUCE; asserts both succeed, the 2-rank sums and that 127.0.0.2 is rank 0 (it
    hosts the workers' store). Returns the tzrun agent."""
    log = open(tmp_path / "torchrun.log", "w")
    start_torchrun = lambda: subprocess.Popen(  # noqa: E731
        [os.path.join(VENV_BIN, "torchrun"), *args(tr_addr)], env=env_for(LOGLEVEL="INFO"),
        stdout=log, stderr=subprocess.STDOUT)
    if torchrun_first:
        t = start_torchrun()
        time.sleep(3.0)  # torchrun's agent starts slower (python imports)
        a = agents(args(tz_addr), tmp_path / "tzrun.log")
    else:
        a = agents(args(tz_addr), tmp_path / "tzrun.log")
        time.sleep(0.5)
        t = start_torchrun()
    try:
        assert t.wait(180) == 0, logs(a) + (tmp_path / "torchrun.log").read_text()[-6000:]
    finally:
        if t.poll() is None:
            t.kill()
        log.close()
    assert a.wait(60) == 0, logs(a)
    for rank in range(2):
        value, world = (tmp_path / f"sum{rank}.txt").read_text().split()
        assert float(value) == 3.0 and int(world) == 2
    text = (tmp_path / "torchrun.log").read_text()
    tr_rank = 0 if tr_addr == "127.0.0.2" else 1
    assert f"group_rank={tr_rank}" in text and "master_addr=127.0.0.2" in text, text[-4000:]
    assert "master_addr=127.0.0.2" in a.text(), logs(a)
    return a

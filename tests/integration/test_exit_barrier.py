"""Exit barrier and stragglers with real tzrun agents and real python workers on 127.0.0.1.

- static, 2 nodes: node 1's worker runs longer than --exit-barrier-timeout. Node 0 hosts the
  store: it must not leave (that tore the store down and node 1 SIGTERMed its healthy worker
  and exited 125); it warns naming node 1 and waits, both agents exit 0, node 1's worker ends
  on its own;
- the same with node 1's agent SIGKILLed: node 0 stops waiting once node 1's heartbeat is
  gone and still reports success, as after a plain barrier timeout;
- c10d, 2 nodes: the same for the agent hosting the rendezvous and the workers' store;
- one node, 2 workers, local rank 1 lingers: a warning names it (rank, pid, how long) after
  --straggler-warning seconds; with --straggler-timeout it is stopped and the run fails with
  it as the root cause (SIGTERM, exit 143), or, with --max-restarts, the group restarts.
"""
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from conftest import binary, free_port

VENV_BIN = str(pathlib.Path(sys.executable).parent)

# Stdlib worker: records its start, sleeps argv[2] seconds on node GROUP_RANK == argv[3]
# (local rank LOCAL_RANK == argv[4], or every one when it is "*"; with argv[5] ==
# "first-attempt-only" only in attempt 0), else 0.2 s, then records its end. A SIGTERM is
# recorded too.
WORKER = r'''
import os, signal, sys, time
out, slow_s, slow_node, slow_local = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
g, lr = os.environ["GROUP_RANK"], os.environ["LOCAL_RANK"]
tag = f"{g}.{lr}"
def note(what):
    with open(os.path.join(out, "events.txt"), "a") as f:
        f.write(f"{tag} {what}\n")
def on_term(signum, frame):
    note("sigterm")
    sys.exit(143)
signal.signal(signal.SIGTERM, on_term)
note(f"start {os.getpid()}")
only_first = len(sys.argv) > 5 and sys.argv[5] == "first-attempt-only"
slow = g == slow_node and slow_local in ("*", lr) and not (
    only_first and os.environ["TORCHELASTIC_RESTART_COUNT"] != "0")
time.sleep(slow_s if slow else 0.2)
note("done")
'''


def env_for(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PET_", "TORCHELASTIC_"))}
    env["PATH"] = VENV_BIN + os.pathsep + env.get("PATH", "/usr/bin:/bin")
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


@pytest.fixture
def agents():
    started = []

    def start(argv, log):
        a = Agent(argv, log)
        started.append(a)
        return a

    yield start
    for a in started:
        if a.proc.poll() is None:
            a.proc.kill()
            a.proc.wait()
        a.log.close()


def logs(*agents_):
    return "\n".join(f"===== agent {i} =====\n{a.text()[-6000:]}" for i, a in enumerate(agents_))


def events(out: pathlib.Path):
    p = out / "events.txt"
    return p.read_text().split("\n") if p.exists() else []


def static_pair(agents, out: pathlib.Path, slow_s: float, extra=()):
    script = out / "w.py"
    script.write_text(WORKER)
    port = free_port()
    common = ["--nnodes=2", f"--master-port={port}", "--master-addr=127.0.0.1",
              "--nproc-per-node=1", *extra]
    return [agents([*common, f"--node-rank={r}", str(script), str(out), str(slow_s), "1", "*"],
                   out / f"n{r}.log") for r in (0, 1)]


def test_store_host_keeps_the_store_up_for_a_slower_healthy_node(tmp_path, agents):
    # close_timeout=1: node 0 no longer waits 30 s for the others after its own end either,
    # so only the barrier's hold can keep the store up for node 1's 8 s worker.
    a = static_pair(agents, tmp_path, 8.0,
                    ["--exit-barrier-timeout=2", "--rdzv-conf=close_timeout=1"])
    assert a[1].wait(120) == 0, logs(*a)
    assert a[0].wait(30) == 0, logs(*a)
    ev = events(tmp_path)
    assert "1.0 done" in ev and "1.0 sigterm" not in ev, f"{ev}\n{logs(*a)}"
    n0 = a[0].text()
    assert ("exit barrier: not every node finished within 2 s (1 of 2 arrived); node 1 still "
            "running healthy workers: this node hosts the store they use") in n0, logs(*a)
    assert "Sending process" not in a[1].text(), logs(*a)
    assert "Error waiting on exit barrier" not in n0, logs(*a)


def test_store_host_stops_waiting_for_a_node_whose_agent_died(tmp_path, agents):
    # close_timeout: how long node 0 then waits for node 1 to leave (default 30 s).
    a = static_pair(agents, tmp_path, 120.0,
                    ["--exit-barrier-timeout=1", "--rdzv-conf=close_timeout=3"])
    deadline = time.monotonic() + 90
    while "1.0 start" not in " ".join(events(tmp_path)) and time.monotonic() < deadline:
        assert a[0].proc.poll() is None and a[1].proc.poll() is None, logs(*a)
        time.sleep(0.1)
    while "still running healthy workers" not in a[0].text() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "node 1 still running healthy workers" in a[0].text(), logs(*a)
    t0 = time.monotonic()
    a[1].proc.send_signal(signal.SIGKILL)  # its worker gets SIGKILL too (PDEATHSIG)
    assert a[0].wait(60) == 0, logs(*a)
    assert time.monotonic() - t0 < 40, logs(*a)
    assert ("Error waiting on exit barrier: not every node finished within 1 s (1 of 2 "
            "arrived; node 1 stopped sending heartbeats); reporting success anyway") in \
        a[0].text(), logs(*a)


def test_c10d_store_host_waits_for_a_slower_healthy_node(tmp_path, agents):
    """c10d: 127.0.0.2 hosts the rendezvous store and (round rank 0) the workers' store."""
    script = tmp_path / "w.py"
    script.write_text(WORKER)
    port = free_port()
    conf = "join_timeout=60,last_call_timeout=1,keep_alive_interval=1,close_timeout=1"
    argv = lambda addr: [  # noqa: E731
        "--nnodes=2", "--nproc-per-node=1", "--rdzv-backend=c10d",
        f"--rdzv-endpoint=127.0.0.1:{port}", "--rdzv-id=barrier-job", f"--rdzv-conf={conf}",
        f"--local-addr={addr}", "--exit-barrier-timeout=2", str(script), str(tmp_path), "8",
        "1", "*"]
    host = agents(argv("127.0.0.2"), tmp_path / "host.log")
    time.sleep(0.3)  # it hosts the rendezvous store
    other = agents(argv("127.0.0.3"), tmp_path / "other.log")
    assert other.wait(120) == 0, logs(host, other)
    assert host.wait(30) == 0, logs(host, other)
    ev = events(tmp_path)
    assert "1.0 done" in ev and "1.0 sigterm" not in ev, f"{ev}\n{logs(host, other)}"
    assert "node 1 still running healthy workers" in host.text(), logs(host, other)


def single_node(agents, out: pathlib.Path, slow_s: float, flags, *extra):
    script = out / "w.py"
    script.write_text(WORKER)
    return agents([f"--master-port={free_port()}", "--nproc-per-node=2", *flags, str(script),
                   str(out), str(slow_s), "0", "1", *extra], out / "agent.log")


def test_straggler_warning_names_the_lingering_rank(tmp_path, agents):
    a = single_node(agents, tmp_path, 4.0, ["--straggler-warning=1"])
    assert a.wait(60) == 0, logs(a)
    pid = next(line.split()[2] for line in events(tmp_path) if line.startswith("0.1 start"))
    text = a.text()
    assert f"worker local_rank 1 (pid {pid}) is still running 1" in text, logs(a)
    assert "after every other local worker exited 0" in text, logs(a)
    assert text.count("is still running") == 1, logs(a)  # once per attempt
    assert "0.1 done" in events(tmp_path)


def test_straggler_timeout_stops_it_and_fails_the_group(tmp_path, agents):
    t0 = time.monotonic()
    a = single_node(agents, tmp_path, 120.0, ["--straggler-timeout=2", "--shutdown-timeout=5"])
    assert a.wait(60) == 143, logs(a)
    assert time.monotonic() - t0 < 40, logs(a)
    text = a.text()
    assert "after every other local worker exited 0" in text, logs(a)
    assert "stopping it (--straggler-timeout=2); the worker group counts as failed" in text
    assert "0.1 sigterm" in events(tmp_path), logs(a)
    assert "Root Cause" in text and "local_rank: 1" in text, logs(a)


def test_no_straggler_warning_by_default_for_a_short_tail(tmp_path, agents):
    a = single_node(agents, tmp_path, 2.0, [])
    assert a.wait(60) == 0, logs(a)
    assert "is still running" not in a.text(), logs(a)


def test_a_stopped_straggler_is_a_failure_that_max_restarts_retries(tmp_path, agents):
    a = single_node(agents, tmp_path, 120.0, ["--straggler-timeout=2", "--max-restarts=1"],
                    "first-attempt-only")
    assert a.wait(60) == 0, logs(a)
    ev = events(tmp_path)
    assert ev.count("0.1 sigterm") == 1 and ev.count("0.1 done") == 1, f"{ev}\n{logs(a)}"
    assert "Worker group FAILED. 1/1 attempts left; will restart worker group" in a.text()

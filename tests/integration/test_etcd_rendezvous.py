"""The etcd-v2 and legacy etcd rendezvous backends end to end: a real etcd (Debian's etcd-server, started here
on free ports with --enable-v2=true) and tzrun agents on 127.0.0.1 told apart by --local-addr
(as test_rendezvous_local.py does for c10d).

- 2 agents (nproc 2 + 1) form a world, workers gloo all_reduce through the TCPStore that
  round rank 0 hosts (MASTER_ADDR/PORT published in the etcd round store, torchrun 2.11);
  the state left in etcd is torchrun's pickle: Python's pickle.loads reads it;
- losing the node that hosts the workers' store (rank 0, what c10d would make the store
  host): the survivors form a smaller world from the state in etcd, and a node that comes
  back makes it grow again, all within --max-restarts;
- etcd unreachable -> exit 125 naming etcd; refused --rdzv-conf keys and the legacy `etcd`
  backend -> usage errors naming them (TLS itself: test_etcd_tls.py);
- a real torchrun agent (python-etcd installed) and a tzrun agent share one rendezvous.
Each runs with both backends where both apply (the legacy `etcd` backend ranks nodes in join
order, etcd-v2 by sorted node descriptor).
"""
import base64
import json
import os
import pathlib
import pickle
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from conftest import binary, free_port
from test_rendezvous_local import (ALLREDUCE, LOOP_WORKER, agents, env_for, logs,  # noqa: F401
                                  run_beside_torchrun, wait_for, worlds)

ETCD = os.environ.get("TZRUN_ETCD") or shutil.which("etcd") or "/usr/bin/etcd"
VENV_BIN = str(pathlib.Path(sys.executable).parent)
CONF = ("join_timeout=60,last_call_timeout=1,keep_alive_interval=1,keep_alive_max_attempt=3,"
        "read_timeout=10,close_timeout=10")
INFRA_EXIT = 125
USAGE_EXIT = 2


def start_etcd(tmp_path, v2=True):
    """Starts a private etcd on free ports; returns (endpoint host:port, process, log file)."""
    if not os.access(ETCD, os.X_OK):
        pytest.skip("no etcd binary (apt-get install etcd-server, or TZRUN_ETCD)")
    port, peer = free_port(), free_port()
    client = f"http://127.0.0.1:{port}"
    peer_url = f"http://127.0.0.1:{peer}"
    log = open(tmp_path / "etcd.log", "w")
    proc = subprocess.Popen(
        [ETCD, "--name=t", f"--data-dir={tmp_path / 'etcd-data'}",
         f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
         f"--listen-peer-urls={peer_url}", f"--initial-advertise-peer-urls={peer_url}",
         f"--initial-cluster=t={peer_url}"] + (["--enable-v2=true"] if v2 else []),
        stdout=log, stderr=subprocess.STDOUT)
    end = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"{client}/v2/keys/" if v2 else f"{client}/version",
                                   timeout=1).read()
            break
        except OSError:
            if time.monotonic() > end or proc.poll() is not None:
                proc.kill()
                pytest.fail("etcd did not start:\n" + (tmp_path / "etcd.log").read_text())
            time.sleep(0.1)
    return f"127.0.0.1:{port}", proc, log


@pytest.fixture
def etcd(tmp_path):
    """A private etcd with its v2 API; yields its client endpoint host:port."""
    endpoint, proc, log = start_etcd(tmp_path)
    yield endpoint
    proc.kill()
    proc.wait()
    log.close()


def etcd_state(endpoint: str, run_id: str):
    """torchrun's _RendezvousState as Python's pickle reads it from etcd."""
    import torch.distributed.elastic.rendezvous.dynamic_rendezvous  # noqa: F401 (the classes)
    url = f"http://{endpoint}/v2/keys/torch/elastic/rendezvous/{run_id}"
    node = json.load(urllib.request.urlopen(url, timeout=5))["node"]
    return pickle.loads(base64.b64decode(node["value"])), node


BACKENDS = ["etcd-v2", "etcd"]
# The legacy backend reads only timeout, last_call_timeout, etcd_prefix and read_timeout.
LEGACY_CONF = "timeout=120,last_call_timeout=1,read_timeout=10"


def etcd_args(endpoint, addr, out, worker, *, nnodes="2", nproc=1, restarts=0, run_id="etcd-job",
              conf=CONF, backend="etcd-v2"):
    if backend == "etcd" and conf == CONF:
        conf = LEGACY_CONF
    return [f"--nnodes={nnodes}", f"--nproc-per-node={nproc}", f"--rdzv-backend={backend}",
            f"--rdzv-endpoint={endpoint}", f"--rdzv-id={run_id}", f"--rdzv-conf={conf}",
            f"--local-addr={addr}", f"--max-restarts={restarts}", str(worker), str(out)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_etcd_two_nodes_gloo_all_reduce(tmp_path, agents, etcd, backend):
    a = agents(etcd_args(etcd, "127.0.0.2", tmp_path, ALLREDUCE, nproc=2, backend=backend),
               tmp_path / "a.log")
    time.sleep(0.5)  # the legacy backend ranks by join order: a first
    b = agents(etcd_args(etcd, "127.0.0.3", tmp_path, ALLREDUCE, backend=backend),
               tmp_path / "b.log")
    assert a.wait(180) == 0, logs(a, b)
    assert b.wait(60) == 0, logs(a, b)
    for rank in range(3):
        value, world = (tmp_path / f"sum{rank}.txt").read_text().split()
        assert float(value) == 6.0 and int(world) == 3
    # Workers got the TCPStore of round rank 0 (torchrun 2.11's shared agent store).
    assert "master_addr=127.0.0.2" in a.text() and "master_addr=127.0.0.2" in b.text(), logs(a, b)
    if backend == "etcd":
        url = f"http://{etcd}/v2/keys/torchelastic/p2p/run_etcd-job/rdzv/active_version"
        state = json.loads(json.load(urllib.request.urlopen(url, timeout=5))["node"]["value"])
        assert state["status"] == "closed" and state["participants"] == [0, 1], state
        return
    # The state is torchrun's: pickle.loads gives a _RendezvousState, closed by the shutdown.
    state, node = etcd_state(etcd, "etcd-job")
    assert type(state).__name__ == "_RendezvousState"
    assert state.closed and state.complete and state.round == 0
    assert sorted((n.addr, r) for n, r in state.participants.items()) == [
        ("127.0.0.2", 0), ("127.0.0.3", 1)]
    assert set(state.last_heartbeats) == set(state.participants)
    assert all(t.tzinfo is not None for t in state.last_heartbeats.values())
    assert 0 < node["ttl"] <= 7200  # torchrun's state TTL


@pytest.mark.parametrize("backend", BACKENDS)
def test_etcd_loses_the_rank0_node_then_grows_back(tmp_path, agents, etcd, backend):
    worker = tmp_path / "loop.py"
    worker.write_text(LOOP_WORKER)
    conf = (CONF if backend == "etcd-v2" else LEGACY_CONF).replace("last_call_timeout=1",
                                                                   "last_call_timeout=3")
    args = lambda addr: etcd_args(etcd, addr, tmp_path, worker, nnodes="2:3", restarts=3,  # noqa: E731
                                  conf=conf, backend=backend)
    a = agents(args("127.0.0.2"), tmp_path / "a.log")
    time.sleep(0.5)  # a joins first: rank 0 under both backends
    b = agents(args("127.0.0.3"), tmp_path / "b.log")
    c = agents(args("127.0.0.4"), tmp_path / "c.log")
    wait_for(lambda: len(worlds(tmp_path, 3)) == 3, 150, "a 3-node world", a, b, c)
    first = worlds(tmp_path, 3)
    assert {f["MASTER_ADDR"] for f in first} == {"127.0.0.2"}  # rank 0 hosts the workers' store
    a.proc.send_signal(signal.SIGKILL)  # the node a c10d job would have its store on
    a.proc.wait()
    wait_for(lambda: len(worlds(tmp_path, 2)) == 2, 150, "the survivors' 2-node world", b, c)
    second = worlds(tmp_path, 2)
    assert len({f["MASTER_ADDR"] for f in second}) == 1, second
    assert {f["MASTER_ADDR"] for f in second} <= {"127.0.0.3", "127.0.0.4"}, second
    assert all(f["sum"] == 2.0 for f in second)
    # The lost node comes back (a new agent): the world grows back to 3 nodes.
    a2 = agents(args("127.0.0.2"), tmp_path / "a2.log")
    n3 = len(worlds(tmp_path, 3))
    wait_for(lambda: len(worlds(tmp_path, 3)) == n3 + 3, 150, "the 3-node world again", a2, b, c)
    third = worlds(tmp_path, 3)[n3:]
    assert sorted(f["GROUP_RANK"] for f in third) == ["0", "1", "2"]
    assert all(f["sum"] == 3.0 for f in third)
    (tmp_path / "stop").touch()
    for x in (a2, b, c):
        assert x.wait(60) == 0, logs(a2, b, c)


FAIL_WORKER = r'''
import os, sys, time
if os.environ["GROUP_RANK"] == "1":
    time.sleep(1.0)
    sys.exit(3)
time.sleep(60)
'''


@pytest.mark.parametrize("backend", BACKENDS)
def test_etcd_final_failure_stops_the_other_node_with_its_exit_code(tmp_path, agents, etcd,
                                                                    backend):
    """No restarts left on node 1: it closes the rendezvous with its exit code (a tzrun field
    in the state) and node 0 stops its workers and exits with that code."""
    worker = tmp_path / "fail.py"
    worker.write_text(FAIL_WORKER)
    a = agents(etcd_args(etcd, "127.0.0.2", tmp_path, worker, backend=backend), tmp_path / "a.log")
    time.sleep(0.5)
    b = agents(etcd_args(etcd, "127.0.0.3", tmp_path, worker, backend=backend), tmp_path / "b.log")
    t0 = time.monotonic()
    assert b.wait(120) == 3, logs(a, b)
    assert a.wait(60) == 3, logs(a, b)
    assert time.monotonic() - t0 < 40, logs(a, b)


SLOW_NODE1_WORKER = r'''
import os, pathlib, sys, time
if os.environ["GROUP_RANK"] == "1":
    pathlib.Path(sys.argv[1], "node1_running").touch()
    time.sleep(120)
'''


def test_legacy_etcd_store_host_stops_waiting_for_a_node_that_died(tmp_path, agents, etcd):
    """Node 0 (hosting the workers' store) finished; node 1 is SIGKILLed while its worker runs.
    Its keep-alive lease lapses, so node 0's exit barrier ends instead of holding forever
    (found by a new-user trial: it waited without end)."""
    worker = tmp_path / "slow1.py"
    worker.write_text(SLOW_NODE1_WORKER)
    args = lambda addr: ["--exit-barrier-timeout=3"] + etcd_args(  # noqa: E731
        etcd, addr, tmp_path, worker, nnodes="1:2", backend="etcd")
    a = agents(args("127.0.0.2"), tmp_path / "a.log")
    time.sleep(0.5)  # a joins first: rank 0
    b = agents(args("127.0.0.3"), tmp_path / "b.log")
    wait_for(lambda: (tmp_path / "node1_running").exists(), 120, "node 1's worker", a, b)
    b.proc.send_signal(signal.SIGKILL)
    b.proc.wait()
    t0 = time.monotonic()
    assert a.wait(60) == 0, logs(a, b)
    assert time.monotonic() - t0 < 40, logs(a, b)  # the lease TTL (10 s) plus the barrier
    assert "still running healthy workers" in a.text(), logs(a, b)  # it did hold while alive


@pytest.mark.parametrize("backend", BACKENDS)
def test_etcd_unreachable_etcd_exits_125(tmp_path, agents, backend):
    port = free_port()  # nothing listens there
    conf = "join_timeout=3,read_timeout=2" if backend == "etcd-v2" else "timeout=3,read_timeout=2"
    a = agents(etcd_args(f"127.0.0.1:{port}", "127.0.0.2", tmp_path, ALLREDUCE, conf=conf,
                         backend=backend), tmp_path / "a.log")
    assert a.wait(60) == INFRA_EXIT, logs(a)
    assert f"lost etcd at 127.0.0.1:{port}" in a.text(), logs(a)
    assert "--enable-v2=true" in a.text(), logs(a)


@pytest.mark.parametrize("backend", BACKENDS)
def test_etcd_without_v2_api_fails_at_once(tmp_path, agents, backend):
    """etcd 3.4/3.5 started without --enable-v2 answers HTTP 404 on /v2/keys: retrying cannot
    help, so the agent stops at once (not after join_timeout) and says how to fix it (found
    by a new-user trial: it retried for the whole join_timeout saying etcd "does not answer")."""
    endpoint, proc, log = start_etcd(tmp_path, v2=False)
    try:
        conf = "join_timeout=60,read_timeout=5" if backend == "etcd-v2" else "timeout=60,read_timeout=5"
        t0 = time.monotonic()
        a = agents(etcd_args(endpoint, "127.0.0.2", tmp_path, ALLREDUCE, conf=conf,
                             backend=backend), tmp_path / "a.log")
        assert a.wait(50) == INFRA_EXIT, logs(a)
        assert time.monotonic() - t0 < 20, logs(a)
        text = a.text()
        assert f"etcd at {endpoint} has no v2 keys API" in text, logs(a)
        assert "--enable-v2=true" in text and "does not answer" not in text, logs(a)
        assert "404 page not found\n" not in text, logs(a)
    finally:
        proc.kill()
        proc.wait()
        log.close()


@pytest.mark.parametrize("backend,conf,needle", [
    ("etcd-v2", "protocol=ftp", "--rdzv-conf protocol=ftp"),
    ("etcd-v2", "protocol=https,ssl_cert=/no/c.pem", "--rdzv-conf ssl_cert=/no/c.pem: cannot read"),
    ("etcd-v2", "ca_cert=/etc/hostname", "--rdzv-conf ca_cert: a certificate needs protocol=https"),
    ("etcd-v2", "is_host=true", "--rdzv-conf is_host"),
    ("etcd", "protocol=HTTPS", "--rdzv-conf protocol=HTTPS"),
    ("etcd", "protocol=https,cacert=/no/ca.pem", "--rdzv-conf cacert=/no/ca.pem: cannot read"),
    ("etcd", "join_timeout=5", "--rdzv-conf join_timeout"),
])
def test_etcd_refusals_name_what_is_refused(tmp_path, backend, conf, needle):
    argv = [binary("tzrun"), "--nnodes=2", f"--rdzv-backend={backend}",
            "--rdzv-endpoint=127.0.0.1:1", "--no-python", "true"]
    if conf:
        argv.insert(2, f"--rdzv-conf={conf}")
    r = subprocess.run(argv, env=env_for(), capture_output=True, text=True, timeout=60)
    assert r.returncode == USAGE_EXIT, r.stdout + r.stderr
    assert needle in r.stderr, r.stderr


def _has_python_etcd() -> bool:
    r = subprocess.run([sys.executable, "-c", "import etcd"], capture_output=True)
    return r.returncode == 0


# Runs the real torchrun, but its prerequisite is python-etcd (torchrun's etcd backends import
# it; scripts/setup.sh does not install it): needs_python_etcd, whose skips stay skips.
@pytest.mark.needs_python_etcd
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("first", ["tzrun", "torchrun"])
def test_etcd_torchrun_and_tzrun_agents_share_one_rendezvous(tmp_path, agents, etcd, backend,
                                                            first):
    """The node that joins first (legacy: join order) with the lower address (etcd-v2: sorted
    descriptors) is rank 0 and hosts the workers' TCPStore; the other launcher's workers use
    it. Both directions."""
    if not _has_python_etcd():
        pytest.skip("torchrun's etcd backends need python-etcd (pip install python-etcd)")
    args = lambda addr: etcd_args(etcd, addr, tmp_path, ALLREDUCE, run_id="mixed",  # noqa: E731
                                  backend=backend)
    tz_addr, tr_addr = ("127.0.0.2", "127.0.0.3") if first == "tzrun" else ("127.0.0.3",
                                                                          "127.0.0.2")
    run_beside_torchrun(tmp_path, agents, args, tz_addr, tr_addr,
                        torchrun_first=first == "torchrun")
    if backend == "etcd":
        return
    state, _ = etcd_state(etcd, "mixed")
    assert sorted(n.addr for n in state.participants) == ["127.0.0.2", "127.0.0.3"]

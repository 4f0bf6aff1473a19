"""Multi-host static launches: N hosts as network namespaces (see netns.py), one tzrun
agent per host, real torch gloo all_reduce across hosts.

- flags: `--nnodes 2 --node-rank R --master-addr node0 --master-port P`, 2 workers each;
- platform environments only (the command is `tzrun SCRIPT ARGS`, no flags): PAI-DLC
  (WORLD_SIZE/RANK = node count/rank, MASTER_ADDR/PORT, NPROC_PER_NODE), Kubeflow
  training-operator v1.7+ (PET_* plus WORLD_SIZE = pods x nproc and RANK = pod index,
  which must not be mistaken for DLC's meaning), Kubeflow Trainer v2 (PET_* only).

Every worker records its torchrun environment (RANK, GROUP_RANK, WORLD_SIZE, ...) and the
result of an all_reduce of RANK+1; the tests check the ranks follow torchrun's layout
(RANK = GROUP_RANK * nproc + LOCAL_RANK, node rank = the platform's node index) and that
the sums equal 1 + ... + WORLD_SIZE on every rank.

TZRUN_NETNS_LAUNCHER=torchrun runs the same scenarios against the real torchrun (a check
of the tests themselves; tzrun-only scenarios are skipped then).
"""
import os
import pathlib
import sys
import time

import pytest

import netns
from conftest import binary

pytestmark = pytest.mark.needs_netns  # every test builds hosts out of network namespaces

VENV_BIN = str(pathlib.Path(sys.executable).parent)
LAUNCHER = os.environ.get("TZRUN_NETNS_LAUNCHER", "tzrun")
AGENT_TIMEOUT = 240  # seconds; 4 torch workers import torch on 2 shared cores


def launcher() -> list[str]:
    if LAUNCHER == "torchrun":
        return [os.path.join(VENV_BIN, "torchrun")]
    return [binary("tzrun")]


@pytest.fixture
def make_cluster():
    yield from netns.cluster_fixture()


def launch_all(cluster, out: pathlib.Path, argv_for, env_for):
    """Start one agent per host; argv_for(host)/env_for(host) give its command and env."""
    procs = []
    for h in cluster:
        procs.append(h.popen([*launcher(), *argv_for(h)], env=env_for(h),
                             log=out / f"agent-{h.name}.log"))
    return procs


def finish(procs, out: pathlib.Path):
    diag = lambda: netns.log_tails(sorted(out.glob("agent-*.log")))  # noqa: E731
    rcs = [netns.wait_exit(p, AGENT_TIMEOUT, diag) for p in procs]
    assert rcs == [0] * len(procs), f"agent exit codes {rcs}\n{diag()}"
    return diag


def check_layout(out: pathlib.Path, nnodes: int, nproc: int, master: str, diag) -> None:
    world = nnodes * nproc
    starts = netns.read_jsonl(out / "starts.jsonl")
    assert len(starts) == world, f"{len(starts)} worker starts, expected {world}\n{diag()}"
    assert sorted(s["rank"] for s in starts) == list(range(world))
    for s in starts:
        assert s["world"] == world and s["group_world"] == nnodes, s
        assert s["local_world"] == nproc and 0 <= s["local_rank"] < nproc, s
        assert s["rank"] == s["group_rank"] * nproc + s["local_rank"], s
        assert s["host"] == f"node{s['group_rank']}", f"node rank != host index: {s}"
        assert s["restart"] == 0, s
        assert s["master"] == master, s
    sums = netns.read_jsonl(out / "sums.jsonl")
    assert sorted(s["rank"] for s in sums) == list(range(world)), f"{sums}\n{diag()}"
    expected = world * (world + 1) / 2
    for s in sums:
        assert s["sum"] == expected and s["n"] == world, f"all_reduce result {s}"


def test_static_2x2_flags_gloo_all_reduce(make_cluster, tmp_path):
    cluster = make_cluster(2)
    worker = netns.write_worker(tmp_path)
    env = netns.clean_env(VENV_BIN)
    procs = launch_all(
        cluster, tmp_path,
        lambda h: ["--nnodes=2", f"--node-rank={h.index}", "--nproc-per-node=2",
                   "--master-addr=node0", "--master-port=29511", "--max-restarts=0",
                   str(worker), str(tmp_path), "once"],
        lambda h: env)
    diag = finish(procs, tmp_path)
    check_layout(tmp_path, nnodes=2, nproc=2, master="node0:29511", diag=diag)


def test_static_nodes_started_out_of_order_by_ip(make_cluster, tmp_path):
    """Node 1 starts first and waits for node 0 (the store host); master given as an IP."""
    cluster = make_cluster(2)
    worker = netns.write_worker(tmp_path)
    env = netns.clean_env(VENV_BIN)
    ip0 = cluster[0].ip
    args = lambda h: ["--nnodes=2", f"--node-rank={h.index}", "--nproc-per-node=1",  # noqa
                      f"--master-addr={ip0}", "--master-port=29512",
                      str(worker), str(tmp_path), "once"]
    late = cluster[1].popen([*launcher(), *args(cluster[1])], env=env,
                            log=tmp_path / "agent-node1.log")
    netns.wait_until(lambda: (tmp_path / "agent-node1.log").exists(), 10, "node1 agent")
    time.sleep(2.0)  # node 1 retries connecting to node 0 meanwhile
    assert late.poll() is None, "node 1 gave up before node 0 started"
    first = cluster[0].popen([*launcher(), *args(cluster[0])], env=env,
                             log=tmp_path / "agent-node0.log")
    diag = finish([first, late], tmp_path)
    check_layout(tmp_path, nnodes=2, nproc=1, master=f"{ip0}:29512", diag=diag)


def platform_env(kind: str, host, nnodes: int, nproc: int, port: int) -> dict:
    if kind == "dlc":  # PAI-DLC: per-node WORLD_SIZE/RANK, service name as MASTER_ADDR
        return {"MASTER_ADDR": "node0", "MASTER_PORT": str(port), "WORLD_SIZE": str(nnodes),
                "RANK": str(host.index), "NPROC_PER_NODE": str(nproc)}
    if kind == "kubeflow-v1":  # training-operator v1.7+ with nprocPerNode integer
        return {"MASTER_ADDR": "node0", "MASTER_PORT": str(port),
                "WORLD_SIZE": str(nnodes * nproc), "RANK": str(host.index),
                "PET_MASTER_ADDR": "node0", "PET_MASTER_PORT": str(port),
                "PET_NODE_RANK": str(host.index), "PET_NNODES": str(nnodes),
                "PET_NPROC_PER_NODE": str(nproc), "PYTHONUNBUFFERED": "1"}
    if kind == "trainer-v2":  # Kubeflow Trainer v2: PET_* only
        return {"PET_NNODES": str(nnodes), "PET_NPROC_PER_NODE": str(nproc),
                "PET_NODE_RANK": str(host.index), "PET_MASTER_ADDR": "node0",
                "PET_MASTER_PORT": str(port)}
    raise ValueError(kind)


@pytest.mark.parametrize("kind", ["dlc", "kubeflow-v1", "trainer-v2"])
def test_platform_env_only_launch(make_cluster, tmp_path, kind):
    if LAUNCHER == "torchrun" and kind == "dlc":
        pytest.skip("torchrun does not read PAI-DLC's WORLD_SIZE/RANK/NPROC_PER_NODE")
    cluster = make_cluster(2)
    worker = netns.write_worker(tmp_path)
    procs = launch_all(
        cluster, tmp_path,
        lambda h: [str(worker), str(tmp_path), "once"],
        lambda h: netns.clean_env(VENV_BIN, **platform_env(kind, h, 2, 2, 23456)))
    diag = finish(procs, tmp_path)
    check_layout(tmp_path, nnodes=2, nproc=2, master="node0:23456", diag=diag)

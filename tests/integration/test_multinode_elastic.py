"""Multi-host elastic (c10d) rendezvous: 2-3 hosts as network namespaces (see netns.py),
one tzrun agent per host, `--nnodes 2:3 --rdzv-backend c10d --rdzv-endpoint node0:29400`.

Scenarios (torchrun semantics, reference §3.4 "Membership scenarios"):
- a node is SIGKILLed (agent and workers): the survivors restart (their collectives fail,
  or the agent sees the missing heartbeats first) and continue with the smaller world;
- a node is frozen (SIGSTOP): its heartbeats stop, it is pruned, the survivors continue
  without it; thawed (SIGCONT), it joins again and the world grows back to 3;
- a node's link goes down mid-run: same for the survivors; the cut-off tzrun agent exits
  125 instead of hanging (not checked for torchrun, whose agent can hang there);
- a third node joins later: scale-up restarts everybody into a 3-node world without
  touching TORCHELASTIC_RESTART_COUNT, even with --max-restarts=0;
- the node hosting the rendezvous store dies: the other agents fail fast (exit 125);
- a Kubeflow elasticPolicy-style environment (PET_RDZV_* only) drives the launch.

Workers (netns.MN_WORKER, nproc 1 per host to keep 2 shared cores responsive) record every
start (RANK, WORLD_SIZE, GROUP_RANK, restart count, host) and loop on a gloo all_reduce (or,
for scale-up, hold after one all_reduce) until the test drops a stop flag. Short rendezvous timeouts via --rdzv-conf keep the file to a few
minutes. TZRUN_NETNS_LAUNCHER=torchrun runs the scenarios against the real torchrun.
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
CONF = ("join_timeout=60,last_call_timeout=2,keep_alive_interval=1,keep_alive_max_attempt=3,"
        "read_timeout=30")
FORM_TIMEOUT = 150  # seconds for a new world to form and run its first all_reduce
EXIT_TIMEOUT = 90
INFRA_EXIT = 125  # ExitCode::kInfrastructure (tzrun); torchrun exits 1


def launcher() -> list[str]:
    if LAUNCHER == "torchrun":
        return [os.path.join(VENV_BIN, "torchrun")]
    return [binary("tzrun")]


def job_env(**extra) -> dict:
    env = netns.clean_env(VENV_BIN, **extra)
    if LAUNCHER == "torchrun":
        # torchrun 2.11 keeps one shared worker store across rounds with no per-attempt
        # prefix: restarted workers read the previous round's gloo addresses and fail
        # ("Connection refused"), and a node joining later waits for the new round's
        # MASTER_ADDR, which rank 0 never publishes (its bootstrap info is cached), until
        # read_timeout and fails. With this variable workers host their own store.
        env["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] = "1"
    return env


@pytest.fixture
def make_cluster():
    yield from netns.cluster_fixture()


class Job:
    """One elastic job over a cluster: agents per host, records under `out`."""

    def __init__(self, cluster, out: pathlib.Path, *, nnodes="2:3", mode="loop",
                 max_restarts=3, mn_timeout=10):
        self.cluster, self.out, self.nnodes, self.mode = cluster, out, nnodes, mode
        self.max_restarts = max_restarts
        self.worker = netns.write_worker(out)
        self.env = job_env(MN_TIMEOUT=str(mn_timeout))
        self.procs = {}

    def start(self, host):
        argv = [*launcher(), f"--nnodes={self.nnodes}", "--nproc-per-node=1",
                "--rdzv-backend=c10d", "--rdzv-endpoint=node0:29400", "--rdzv-id=mnjob",
                f"--rdzv-conf={CONF}", f"--max-restarts={self.max_restarts}",
                str(self.worker), str(self.out), self.mode]
        self.procs[host.name] = host.popen(argv, env=self.env,
                                           log=self.out / f"agent-{host.name}.log")
        return self.procs[host.name]

    def diag(self) -> str:
        recs = "\n".join(map(str, netns.read_jsonl(self.out / "starts.jsonl")))
        return (f"worker starts:\n{recs}\n" +
                netns.log_tails(sorted(self.out.glob("agent-*.log"))))

    def generation(self, world: int, since: float = 0.0) -> dict | None:
        """{rank: record} of the latest all_reduce results of a `world`-sized generation
        started after `since`, if every rank has one; else None."""
        latest = {}
        for r in netns.read_jsonl(self.out / "sums.jsonl"):
            if r["world"] == world and r["t"] >= since:
                latest[r["rank"]] = r
        return latest if sorted(latest) == list(range(world)) else None

    def wait_generation(self, world: int, since: float = 0.0, hosts=None) -> dict:
        def ok():
            g = self.generation(world, since)
            return g is not None and (hosts is None or
                                      sorted(r["host"] for r in g.values()) == sorted(hosts))
        netns.wait_until(ok, FORM_TIMEOUT,
                         f"a {world}-node world on {hosts or 'any hosts'} running all_reduce",
                         self.diag)
        gen = self.generation(world, since)
        expected = world * (world + 1) / 2
        for r in gen.values():
            assert r["sum"] == expected and r["n"] == world, f"bad all_reduce {r}\n{self.diag()}"
            assert r["group_world"] == world and r["group_rank"] == r["rank"], r
        # c10d orders node ranks by node descriptor (hostname here): node0 < node1 < node2
        by_rank = [gen[i]["host"] for i in range(world)]
        assert by_rank == sorted(by_rank), f"node ranks not in hostname order: {by_rank}"
        return gen

    def stop_and_wait(self, names) -> None:
        (self.out / "stop").touch()
        for name in names:
            rc = netns.wait_exit(self.procs[name], EXIT_TIMEOUT, self.diag)
            assert rc == 0, f"agent on {name} exited {rc}\n{self.diag()}"


def test_node_sigkill_survivors_continue_smaller(make_cluster, tmp_path):
    cluster = make_cluster(3)
    job = Job(cluster, tmp_path)
    for h in cluster:
        job.start(h)
    job.wait_generation(3)
    t = time.time()
    cluster[2].kill()
    job.wait_generation(2, since=t, hosts=["node0", "node1"])
    job.stop_and_wait(["node0", "node1"])
    assert job.procs["node2"].wait(10) < 0


def test_node_sigstop_pruned_by_heartbeat_loss(make_cluster, tmp_path):
    cluster = make_cluster(3)
    job = Job(cluster, tmp_path, mn_timeout=10)
    for h in cluster:
        job.start(h)
    job.wait_generation(3)
    t = time.time()
    cluster[2].stop()  # frozen: sockets open, no heartbeats, no progress
    job.wait_generation(2, since=t, hosts=["node0", "node1"])
    assert job.procs["node2"].poll() is None, "the frozen agent cannot have exited"
    # Thawed, the pruned node finds itself outside the round and joins again: scale-up.
    t = time.time()
    cluster[2].cont()
    job.wait_generation(3, since=t, hosts=["node0", "node1", "node2"])
    job.stop_and_wait(["node0", "node1", "node2"])


def test_link_down_mid_run(make_cluster, tmp_path):
    cluster = make_cluster(3)
    job = Job(cluster, tmp_path, mn_timeout=10)
    for h in cluster:
        job.start(h)
    job.wait_generation(3)
    t = time.time()
    cluster[2].link_down()
    job.wait_generation(2, since=t, hosts=["node0", "node1"])
    # The cut-off agent loses the rendezvous store: it must give up, not hang.
    # (torchrun's agent can hang here for a long time, so only tzrun is checked.)
    job.stop_and_wait(["node0", "node1"])
    if LAUNCHER == "tzrun":
        rc = netns.wait_exit(job.procs["node2"], EXIT_TIMEOUT, job.diag)
        assert rc == INFRA_EXIT, f"isolated agent exited {rc}\n{job.diag()}"


def test_scale_up_third_node_joins_without_restart_count(make_cluster, tmp_path):
    cluster = make_cluster(3)
    # max_restarts=0: membership changes must not need budget. Workers stop talking to
    # each other after their first all_reduce ("hold"), so no worker fails while the
    # agents restart at slightly different times.
    job = Job(cluster, tmp_path, max_restarts=0, mode="hold")
    job.start(cluster[0])
    job.start(cluster[1])
    job.wait_generation(2, hosts=["node0", "node1"])
    t = time.time()
    job.start(cluster[2])
    gen = job.wait_generation(3, since=t, hosts=["node0", "node1", "node2"])
    starts = netns.read_jsonl(tmp_path / "starts.jsonl")
    assert all(s["restart"] == 0 for s in starts), f"restart count changed:\n{job.diag()}"
    assert {r["master"] for r in gen.values()} == {gen[0]["master"]}
    # node0 and node1 each started twice (2-node and 3-node world), node2 once.
    per_host = {h: sum(1 for s in starts if s["host"] == h) for h in ("node0", "node1", "node2")}
    assert per_host == {"node0": 2, "node1": 2, "node2": 1}, f"{per_host}\n{job.diag()}"
    job.stop_and_wait(["node0", "node1", "node2"])


def test_store_host_loss_agents_fail_fast(make_cluster, tmp_path):
    cluster = make_cluster(3)
    job = Job(cluster, tmp_path)
    for h in cluster:
        job.start(h)
    job.wait_generation(3)
    t = time.monotonic()
    cluster[0].kill()  # hosts the rendezvous store and the workers' store
    for name in ("node1", "node2"):
        rc = netns.wait_exit(job.procs[name], EXIT_TIMEOUT, job.diag)
        assert rc != 0, f"agent on {name} exited {rc} after losing the store\n{job.diag()}"
        if LAUNCHER == "tzrun":
            assert rc == INFRA_EXIT, f"agent on {name} exited {rc}\n{job.diag()}"
    elapsed = time.monotonic() - t
    assert elapsed < EXIT_TIMEOUT, f"agents took {elapsed:.0f}s to give up"


def test_kubeflow_elastic_env_only(make_cluster, tmp_path):
    """Kubeflow elasticPolicy: worker replicas only, everything in PET_* (no flags)."""
    cluster = make_cluster(2)
    worker = netns.write_worker(tmp_path)
    env = job_env(PET_RDZV_BACKEND="c10d", PET_RDZV_ENDPOINT="node0:23456",
                          PET_NNODES="2:3", PET_NPROC_PER_NODE="2", PET_RDZV_ID="kfjob",
                          PET_MAX_RESTARTS="1", PET_RDZV_CONF=CONF, PYTHONUNBUFFERED="1")
    procs = [h.popen([*launcher(), str(worker), str(tmp_path), "once"], env=env,
                     log=tmp_path / f"agent-{h.name}.log") for h in cluster]
    diag = lambda: netns.log_tails(sorted(tmp_path.glob("agent-*.log")))  # noqa: E731
    rcs = [netns.wait_exit(p, FORM_TIMEOUT, diag) for p in procs]
    assert rcs == [0, 0], f"agent exit codes {rcs}\n{diag()}"
    starts = netns.read_jsonl(tmp_path / "starts.jsonl")
    assert sorted(s["rank"] for s in starts) == [0, 1, 2, 3], diag()
    for s in starts:
        assert s["world"] == 4 and s["group_world"] == 2 and s["run_id"] == "kfjob", s
        assert s["rank"] == 2 * s["group_rank"] + s["local_rank"], s
        assert s["host"] == f"node{s['group_rank']}", s
    sums = netns.read_jsonl(tmp_path / "sums.jsonl")
    assert sorted(s["sum"] for s in sums) == [10.0] * 4, sums

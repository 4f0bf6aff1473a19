"""The etcd-v2 rendezvous across hosts (network namespaces, see netns.py): etcd runs on its
own host `etcdhost`, one tzrun agent on each of node0..node2 with
`--rdzv-backend=etcd-v2 --rdzv-endpoint=etcdhost:2379 --nnodes 2:3` (the workers of
test_multinode_elastic.py: gloo all_reduce in a loop, one record per generation).

- node0 is round rank 0: it hosts the workers' store, and under c10d (endpoint node0) it would
  host the rendezvous store, whose loss ends a c10d job (exit 125 everywhere). Its link goes
  down mid-run: node1 and node2 continue in a 2-node world from the state in etcd, and the
  cut-off agent exits 125 (it lost etcd) instead of hanging.
"""
import os
import shutil
import sys
import time

import pytest

import netns
from test_multinode_elastic import CONF, EXIT_TIMEOUT, INFRA_EXIT, Job, launcher, make_cluster  # noqa: F401

pytestmark = pytest.mark.needs_netns

ETCD = os.environ.get("TZRUN_ETCD") or shutil.which("etcd") or "/usr/bin/etcd"


class EtcdJob(Job):
    def start(self, host):
        argv = [*launcher(), f"--nnodes={self.nnodes}", "--nproc-per-node=1",
                "--rdzv-backend=etcd-v2", "--rdzv-endpoint=etcdhost:2379", "--rdzv-id=mnjob",
                f"--rdzv-conf={CONF}", f"--max-restarts={self.max_restarts}",
                str(self.worker), str(self.out), self.mode]
        self.procs[host.name] = host.popen(argv, env=self.env,
                                           log=self.out / f"agent-{host.name}.log")
        return self.procs[host.name]


def start_etcd(host, out):
    if not os.access(ETCD, os.X_OK):
        pytest.skip("no etcd binary (apt-get install etcd-server, or TZRUN_ETCD)")
    host.popen([ETCD, "--name=e", f"--data-dir={out / 'etcd-data'}",
                "--listen-client-urls=http://0.0.0.0:2379",
                "--advertise-client-urls=http://etcdhost:2379",
                "--listen-peer-urls=http://127.0.0.1:2380",
                "--initial-advertise-peer-urls=http://127.0.0.1:2380",
                "--initial-cluster=e=http://127.0.0.1:2380", "--enable-v2=true"],
               env=dict(os.environ), log=out / "etcd.log")
    probe = ("import urllib.request; "
             "urllib.request.urlopen('http://127.0.0.1:2379/v2/keys/', timeout=1).read()")
    netns.wait_until(lambda: host.run([sys.executable, "-c", probe]).returncode == 0, 30,
                     "etcd answering on etcdhost:2379",
                     lambda: (out / "etcd.log").read_text(errors="replace")[-3000:])


def test_etcd_v2_rank0_link_down_survivors_continue(make_cluster, tmp_path):
    cluster = make_cluster(4, names=["etcdhost", "node0", "node1", "node2"])
    start_etcd(cluster[0], tmp_path)
    job = EtcdJob(cluster, tmp_path, mn_timeout=10)
    for h in cluster.hosts[1:]:
        job.start(h)
    gen = job.wait_generation(3)
    assert gen[0]["host"] == "node0", gen  # rank 0 (sorted descriptors) hosts the workers' store
    t = time.time()
    cluster[1].link_down()
    job.wait_generation(2, since=t, hosts=["node1", "node2"])
    job.stop_and_wait(["node1", "node2"])
    rc = netns.wait_exit(job.procs["node0"], EXIT_TIMEOUT, job.diag)
    assert rc == INFRA_EXIT, f"isolated agent exited {rc}\n{job.diag()}"
    assert "lost etcd at etcdhost:2379" in (tmp_path / "agent-node0.log").read_text(), job.diag()

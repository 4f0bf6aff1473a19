"""c10d rendezvous over torch's FileStore (--rdzv-conf store_type=file, torchrun's
c10d_rendezvous_backend.py _create_file_store): the --rdzv-endpoint is the path of a file every
node shares, no agent hosts a store; round rank 0 still hosts the workers' TCP store
(MASTER_ADDR/MASTER_PORT, TORCHELASTIC_USE_AGENT_STORE=True), as torchrun does.

- two tzrun agents (2 nodes on one machine, told apart by --local-addr) and a gloo all_reduce;
- a tzrun agent and the real torchrun on one file, each as round rank 0 and as rank 1;
- torch.distributed.FileStore (Python) reads what tzrun wrote: the state under
  torch.rendezvous.<id> (torchrun's base64 pickle, decoded by torch's own classes), the round keys,
  and FileStore's refcount/cleanup counters;
- no --rdzv-endpoint: a temporary file in $TMPDIR (tempfile.mkstemp);
- a second run on the same file: refused (the closed state stays in it), naming the file;
- the refusals: a bad store_type, TCP-only keys, --standalone.
"""
import base64
import json
import os
import pathlib
import pickle
import struct
import subprocess
import sys

import pytest

from conftest import binary
from test_rendezvous_local import (ALLREDUCE, agents, env_for, logs,  # noqa: F401
                                   run_beside_torchrun)

VENV_BIN = str(pathlib.Path(sys.executable).parent)
CONF = "store_type=file,join_timeout=60,last_call_timeout=1,keep_alive_interval=1,close_timeout=10"


def file_args(store, addr, out, nnodes="2", run_id="filejob", conf=CONF):
    return [f"--nnodes={nnodes}", "--nproc-per-node=1", "--rdzv-backend=c10d",
            f"--rdzv-endpoint={store}", f"--rdzv-id={run_id}", f"--rdzv-conf={conf}",
            f"--local-addr={addr}", str(ALLREDUCE), str(out)]


def records(path):
    """The raw FileStore log: [(key, value)] in file order (independent of both codecs)."""
    data, i, out = pathlib.Path(path).read_bytes(), 0, []
    while i < len(data):
        (n,) = struct.unpack_from("<I", data, i)
        key = data[i + 4:i + 4 + n]
        i += 4 + n
        (n,) = struct.unpack_from("<I", data, i)
        out.append((key, data[i + 4:i + 4 + n]))
        i += 4 + n
    return out


def live_keys(path):
    """The records replayed as FileStore does: the last value wins, "-<key>" deletes <key>."""
    keys = {}
    for k, v in records(path):
        if k.startswith(b"-"):
            keys.pop(k[1:], None)
        else:
            keys[k] = v
    return keys


def sums(out):
    return sorted((out / f"sum{r}.txt").read_text() for r in range(2))


def test_two_tzrun_agents_share_a_file(tmp_path, agents):  # noqa: F811
    store = tmp_path / "rdzv.store"
    a = agents(file_args(store, "127.0.0.2", tmp_path), tmp_path / "a.log")
    b = agents(file_args(store, "127.0.0.3", tmp_path), tmp_path / "b.log")
    assert a.wait(120) == 0, logs(a, b)
    assert b.wait(60) == 0, logs(a, b)
    assert sums(tmp_path) == ["3.0 2", "3.0 2"]
    assert "master_addr=127.0.0.2" in b.text(), logs(b)
    keys = live_keys(store)
    assert keys[b"/torch.rendezvous.filejob.0/MASTER_ADDR"] == b"127.0.0.2"
    # Each agent's FileStore counted itself in and out (torch's ~FileStore), the file stays.
    assert keys[b"refcount/"] == b"0" and keys[b"cleanup/"] == b"2"


PYTHON_READER = r'''
import base64, json, pickle, sys
import torch.distributed as dist
from torch.distributed.elastic.rendezvous import dynamic_rendezvous  # the state's classes
store = dist.FileStore(sys.argv[1])
state = pickle.loads(base64.b64decode(store.get("torch.rendezvous." + sys.argv[2])))
rnd = dist.PrefixStore("torch.rendezvous.%s.%d" % (sys.argv[2], state.round), store)
json.dump({"round": state.round, "closed": state.closed,
           "participants": sorted(n.addr for n in state.participants),
           "master_addr": rnd.get("MASTER_ADDR").decode(),
           "master_port": int(rnd.get("MASTER_PORT")),
           "assigned": json.loads(rnd.get("torchelastic/assigned_ranks/0")),
           "num_keys": store.num_keys()}, sys.stdout)
'''


def test_python_filestore_reads_what_tzrun_wrote(tmp_path, agents):  # noqa: F811
    store = tmp_path / "rdzv.store"
    a = agents(file_args(store, "127.0.0.2", tmp_path, run_id="readme"), tmp_path / "a.log")
    b = agents(file_args(store, "127.0.0.3", tmp_path, run_id="readme"), tmp_path / "b.log")
    assert a.wait(120) == 0 and b.wait(60) == 0, logs(a, b)
    out = subprocess.run([sys.executable, "-c", PYTHON_READER, str(store), "readme"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout)
    assert got["round"] == 0 and got["closed"] is True, got
    assert got["participants"] == ["127.0.0.2", "127.0.0.3"], got
    assert got["master_addr"] == "127.0.0.2" and got["master_port"] > 0, got
    assert got["assigned"][0] == 0 and got["assigned"][1] == 2, got
    assert got["num_keys"] == len(live_keys(store)), (got, live_keys(store))
    # The Python FileStore counted itself in the same file (refcount/ 1 while it was open).
    assert records(store)[-2:] == [(b"cleanup/", b"3"), (b"refcount/", b"0")]


@pytest.mark.needs_torchrun
@pytest.mark.parametrize("rank0", ["tzrun", "torchrun"])
def test_tzrun_and_torchrun_agents_share_a_file(tmp_path, agents, rank0):  # noqa: F811
    """The node with the lower --local-addr is round rank 0 and hosts the workers' store; both
    launchers take both roles, and each starts first once."""
    if not os.access(os.path.join(VENV_BIN, "torchrun"), os.X_OK):
        pytest.skip("no torchrun in the venv (scripts/setup.sh installs torch)")
    store = tmp_path / "rdzv.store"
    tz_addr, tr_addr = ("127.0.0.2", "127.0.0.3") if rank0 == "tzrun" else ("127.0.0.3",
                                                                          "127.0.0.2")
    args = lambda addr: file_args(store, addr, tmp_path, run_id="mixed")  # noqa: E731
    run_beside_torchrun(tmp_path, agents, args, tz_addr, tr_addr,
                        torchrun_first=rank0 == "torchrun")
    keys = live_keys(store)
    assert keys[b"/torch.rendezvous.mixed.0/MASTER_ADDR"] == b"127.0.0.2"
    state = pickle.loads(base64.b64decode(keys[b"/torch.rendezvous.mixed"]))
    assert sorted(n.addr for n in state.participants) == ["127.0.0.2", "127.0.0.3"]
    assert keys[b"refcount/"] == b"0" and keys[b"cleanup/"] == b"2"


def test_without_an_endpoint_the_store_is_a_new_temporary_file(tmp_path, agents):  # noqa: F811
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    argv = ["--nnodes=1", "--nproc-per-node=2", "--rdzv-backend=c10d", "--rdzv-id=tmpjob",
            "--rdzv-conf=store_type=FILE", str(ALLREDUCE), str(tmp_path)]
    r = subprocess.run([binary("tzrun"), *argv], capture_output=True, text=True, timeout=120,
                       env=env_for(TMPDIR=str(tmpdir)))
    assert r.returncode == 0, r.stderr[-4000:]
    files = [f for f in tmpdir.iterdir() if not f.name.startswith("torchelastic_")]  # logs
    assert len(files) == 1 and files[0].name.startswith("tmp") and len(files[0].name) == 11, files
    assert (files[0].stat().st_mode & 0o777) == 0o600
    assert b"/torch.rendezvous.tmpjob" in live_keys(files[0])
    # Two nodes without an endpoint cannot meet: tzrun says so (torchrun times out silently).
    argv[0] = "--nnodes=2"
    argv[4] = "--rdzv-conf=store_type=file,join_timeout=1"
    r = subprocess.run([binary("tzrun"), *argv], capture_output=True, text=True, timeout=120,
                       env=env_for(TMPDIR=str(tmpdir)))
    assert r.returncode != 0
    assert "which no other node knows" in r.stderr, r.stderr[-3000:]


def test_a_second_run_on_the_same_file_names_the_file(tmp_path):
    """The first run closes the rendezvous and the file keeps that state: a second run under the
    same --rdzv-id is refused, and the message says the file holds it; a removed file starts
    afresh."""
    store = tmp_path / "rdzv.store"
    argv = file_args(store, "127.0.0.2", tmp_path, nnodes="1", run_id="again")

    def run():
        return subprocess.run([binary("tzrun"), *argv], capture_output=True, text=True,
                              timeout=120, env=env_for())

    first = run()
    assert first.returncode == 0, first.stderr[-4000:]
    second = run()
    assert second.returncode != 0, second.stderr[-4000:]
    assert "the rendezvous 'again' was closed by node '" in second.stderr, second.stderr[-4000:]
    assert ("start a new one (with a new --rdzv-id) to run again (--rdzv-conf store_type=file "
            f"keeps the ended job's state in '{store}': remove that file, or pass another "
            "--rdzv-endpoint file, to run again under the same --rdzv-id)") in second.stderr
    store.unlink()
    third = run()
    assert third.returncode == 0, third.stderr[-4000:]


@pytest.mark.parametrize("conf,extra,needle", [
    ("store_type=etcd", [], "--rdzv-conf store_type=etcd: the c10d store type is tcp or file"),
    ("store_type=file,is_host=1", [], "--rdzv-conf is_host: only the TCP store has it"),
    ("store_type=file,read_timeout=5", [], "--rdzv-conf read_timeout: only the TCP store has it"),
    ("store_type=file", ["--standalone"], "store_type=file with --standalone"),
], ids=["bad-type", "is_host", "read_timeout", "standalone"])
def test_refusals_name_the_key(tmp_path, conf, extra, needle):
    argv = [*extra, "--rdzv-backend=c10d", f"--rdzv-endpoint={tmp_path / 'f'}",
            f"--rdzv-conf={conf}", str(ALLREDUCE), str(tmp_path)]
    r = subprocess.run([binary("tzrun"), *argv], capture_output=True, text=True, timeout=60,
                       env=env_for())
    assert r.returncode == 2, r.stderr[-3000:]
    assert needle in r.stderr, r.stderr[-3000:]
    assert not (tmp_path / "f").exists()

"""Run-level parity: the scenarios of PyTorch's own launcher tests
(test/distributed/launcher/test_run.py), each launched by the real torchrun of the venv and by
tzrun with the same flags, environment and worker, and the observable results compared:
exit status, what every rank saw (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK,
ROLE_RANK, torch's is_torchelastic_launched(), argv, the module name, an all_reduce over the init
method), the per-rank log files under --log-dir and the console lines of --tee with its prefixes.

Our own code, not torch's test file: both launchers run on the same inputs and must agree.
Command-line verdicts (usage errors, bad --rdzv-conf values) are compared in test_cli_parity.py,
worker environments variable by variable in test_env_parity.py.
"""
import json
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import binary, free_port, torchrun_exe

pytestmark = pytest.mark.needs_torchrun

WORKER = r'''
import json, os, sys
import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record


@record
def main():
    init = os.environ.get("PARITY_INIT", "env")
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if init == "tcp":
        url = f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
        dist.init_process_group("gloo", init_method=url, rank=rank, world_size=world)
    else:
        dist.init_process_group("gloo", init_method="env://")
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    rec = {k: os.environ.get(k) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                                          "GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_RANK",
                                          "ROLE_WORLD_SIZE", "ROLE_NAME")}
    rec.update(argv=sys.argv[1:], name=__name__, all_reduce=t.item(),
               launched=dist.is_torchelastic_launched())
    with open(os.path.join(os.environ["PARITY_OUT"], f"rank-{rank}.json"), "w") as f:
        json.dump(rec, f)
    print(f"hello from rank {rank}", flush=True)
    print(f"warn from rank {rank}", file=sys.stderr, flush=True)
    dist.destroy_process_group()
    code = int(os.environ.get("PARITY_FAIL_RANK_CODE", "0"))
    if code and rank == int(os.environ.get("PARITY_FAIL_RANK", "-1")):
        sys.exit(code)


if __name__ == "__main__":
    main()
'''


def _launchers():
    exe = torchrun_exe()
    if not exe:
        pytest.skip("torchrun is not installed next to this python")
    return {"torchrun": [exe], "tzrun": [binary("tzrun")]}


def _env(extra: dict, out: pathlib.Path) -> dict:
    venv_bin = str(pathlib.Path(sys.executable).parent)
    return {"PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin",
            "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8",
            "PYTHONPATH": str(out.parent), "PARITY_OUT": str(out), **extra}


def _records(out: pathlib.Path) -> dict:
    return {p.name: json.loads(p.read_text()) for p in sorted(out.glob("rank-*.json"))}


def run_both(tmp: pathlib.Path, flags: list[str], target: list[str], extra_env=None,
             timeout=240) -> dict:
    """Run every launcher on the same inputs; returns launcher -> (proc, records, dir)."""
    results = {}
    for name, cmd in _launchers().items():
        d = tmp / name
        (d / "out").mkdir(parents=True)
        (d / "worker.py").write_text(WORKER)
        pkg = d / "paritypkg"
        pkg.mkdir()
        (pkg / "__init__.py").write_text("")
        (pkg / "worker.py").write_text(WORKER)
        expand = [a.replace("{dir}", str(d)) for a in flags + target]
        env = _env({k: v.replace("{dir}", str(d)) for k, v in (extra_env or {}).items()},
                   d / "out")
        proc = subprocess.run(cmd + expand, env=env, cwd=d, capture_output=True, text=True,
                              timeout=timeout)
        results[name] = (proc, _records(d / "out"), d)
    return results


def assert_same_ranks(results, world: int):
    (tr, tr_recs, _), (tz, tz_recs, _) = results["torchrun"], results["tzrun"]
    assert tr.returncode == 0, f"torchrun failed:\n{tr.stderr[-3000:]}"
    assert tz.returncode == 0, f"tzrun failed:\n{tz.stderr[-3000:]}"
    assert len(tr_recs) == world, tr_recs
    assert tz_recs == tr_recs


def test_standalone_env_init(tmp_path):
    r = run_both(tmp_path, ["--standalone", "--nproc-per-node", "2"], ["worker.py", "--lr", "1"])
    assert_same_ranks(r, 2)
    assert r["tzrun"][1]["rank-0.json"]["all_reduce"] == 3.0
    assert r["tzrun"][1]["rank-1.json"]["launched"] is True


@pytest.mark.parametrize("nproc", ["cpu", "auto", "1"])
def test_nproc_per_node_values(tmp_path, nproc):
    """"cpu" is os.cpu_count() in torchrun; "auto" too without a GPU."""
    r = run_both(tmp_path, ["--standalone", "--nproc-per-node", nproc], ["worker.py"])
    world = os.cpu_count() if nproc in ("cpu", "auto") else int(nproc)
    assert_same_ranks(r, world)


def test_pet_environment_instead_of_flags(tmp_path):
    r = run_both(tmp_path, [], ["worker.py"],
                 {"PET_STANDALONE": "1", "PET_NPROC_PER_NODE": "2", "PET_ROLE": "trainer"})
    assert_same_ranks(r, 2)
    assert r["tzrun"][1]["rank-1.json"]["ROLE_NAME"] == "trainer"


def test_module_entrypoint(tmp_path):
    """-m runs `python -m paritypkg.worker`: __name__ is __main__ and argv the script args."""
    r = run_both(tmp_path, ["--standalone", "--nproc-per-node", "2", "-m"],
                 ["paritypkg.worker", "--flag", "x"])
    assert_same_ranks(r, 2)
    assert r["tzrun"][1]["rank-0.json"]["argv"] == ["--flag", "x"]


def test_no_python_entrypoint(tmp_path):
    """--no-python runs the entrypoint as a program: here the venv python with worker.py."""
    r = run_both(tmp_path, ["--standalone", "--nproc-per-node", "2", "--no-python"],
                 [sys.executable, "{dir}/worker.py", "a"])
    assert_same_ranks(r, 2)


def test_tcp_init_method(tmp_path):
    """init_method=tcp://MASTER_ADDR:MASTER_PORT with explicit rank and world size: with
    TORCHELASTIC_USE_AGENT_STORE=True every rank is a client of the agent's store (torch's
    _create_c10d_store), so only the launcher's own address works (another port would hang)."""
    r = run_both(tmp_path, ["--standalone", "--nproc-per-node", "2"], ["worker.py"],
                 {"PARITY_INIT": "tcp"})
    assert_same_ranks(r, 2)


def test_elastic_min_max_with_two_agents(tmp_path):
    """--nnodes 1:2 with two agents on one c10d endpoint: one round of world 2."""
    results = {}
    for name, cmd in _launchers().items():
        d = tmp_path / name
        (d / "out").mkdir(parents=True)
        (d / "worker.py").write_text(WORKER)
        flags = ["--nnodes", "1:2", "--nproc-per-node", "1", "--rdzv-backend", "c10d",
                 "--rdzv-endpoint", f"127.0.0.1:{free_port()}", "--rdzv-id", "parity",
                 "worker.py"]
        env = _env({}, d / "out")
        procs = [subprocess.Popen(cmd + flags, env=env, cwd=d, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
        outs = [p.communicate(timeout=240) for p in procs]
        assert [p.returncode for p in procs] == [0, 0], f"{name}: {outs}"
        results[name] = _records(d / "out")
    assert len(results["torchrun"]) == 2
    strip = ("GROUP_RANK",)  # which agent gets node rank 0 is a race in both launchers
    norm = {n: {k: {f: v for f, v in rec.items() if f not in strip} for k, rec in recs.items()}
            for n, recs in results.items()}
    assert norm["tzrun"] == norm["torchrun"]


def _log_tree(d: pathlib.Path) -> dict:
    """The --log-dir tree below the run directory: relative path -> content."""
    runs = [p for p in (d / "logs").iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return {str(p.relative_to(runs[0])): p.read_text() for p in sorted(runs[0].rglob("*"))
            if p.is_file() and p.name != "error.json"}


def _prefixed(text: str) -> list[str]:
    return sorted(line for line in text.splitlines() if line.startswith("["))


@pytest.mark.parametrize("flags", [
    ["--redirects", "3", "--tee", "3"],
    ["-r", "1", "-t", "2"],
    ["--tee", "3", "--local-ranks-filter", "1"],
    ["--redirects", "3", "--logs-specs", "default"],
], ids=["redirects3_tee3", "r1_t2", "tee3_filter1", "logs_specs_default"])
def test_log_capture(tmp_path, flags):
    r = run_both(tmp_path, ["--standalone", "--nproc-per-node", "2", "--log-dir", "{dir}/logs",
                            *flags], ["worker.py"])
    assert_same_ranks(r, 2)
    (tr, _, trd), (tz, _, tzd) = r["torchrun"], r["tzrun"]
    assert _log_tree(tzd) == _log_tree(trd)
    assert _prefixed(tz.stdout) == _prefixed(tr.stdout)
    assert _prefixed(tz.stderr) == _prefixed(tr.stderr)


def test_log_line_prefix_template(tmp_path):
    r = run_both(tmp_path, ["--standalone", "--nproc-per-node", "2", "--tee", "3"], ["worker.py"],
                 {"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": "[${role_name}-${rank}|${local_rank}]:"})
    assert_same_ranks(r, 2)
    (tr, _, _), (tz, _, _) = r["torchrun"], r["tzrun"]
    assert _prefixed(tr.stdout) == ["[default-0|0]:hello from rank 0",
                                    "[default-1|1]:hello from rank 1"]
    assert _prefixed(tz.stdout) == _prefixed(tr.stdout)


def test_failing_rank_exit_status(tmp_path):
    """A rank exiting 3: both name that rank and its code as the root cause. torchrun exits 1;
    tzrun exits with the root cause's code (a deliberate difference, docs/launcher.md "Exit
    codes")."""
    r = run_both(tmp_path, ["--standalone", "--nproc-per-node", "2"], ["worker.py"],
                 {"PARITY_FAIL_RANK": "1", "PARITY_FAIL_RANK_CODE": "3"})
    (tr, _, _), (tz, _, _) = r["torchrun"], r["tzrun"]
    assert (tr.returncode, tz.returncode) == (1, 3)
    for proc in (tr, tz):
        assert "rank      : 1 (local_rank: 1)" in proc.stderr
        assert "exitcode  : 3" in proc.stderr

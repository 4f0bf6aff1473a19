"""PyTorch's test/distributed/launcher/test_run.py (ElasticLaunchTest), adapted to tzrun.

Each case runs tzrun as a subprocess where the original calls torch.distributed.run.main()
in-process; the worker scripts (bin/test_script.py, bin/test_script.sh,
bin/test_script_is_torchelastic_launched.py of the PyTorch tree) are re-created here with the
same behaviour: each worker touches a file named after its global rank. The assertions are
the original ones where they apply; an exception torchrun raises becomes a non-zero exit
(a usage error, 2, where torchrun raises ValueError while parsing). Cases that mock torch
internals (GPU/XPU counts, LocalElasticAgent.run, the rendezvous handler) have no
subprocess equivalent and are left out.
"""
import os
import pathlib
import subprocess
import sys
import textwrap
import uuid

import pytest

from conftest import binary, free_port

VENV_BIN = str(pathlib.Path(sys.executable).parent)
TIMEOUT = 180

TEST_SCRIPT_PY = """\
    import argparse, os, sys
    p = argparse.ArgumentParser()
    p.add_argument("--fail", action="store_true")
    p.add_argument("--touch-file-dir", "--touch_file_dir", type=str)
    args = p.parse_args()
    for k in ("LOCAL_RANK", "RANK", "GROUP_RANK", "ROLE_RANK", "ROLE_NAME", "LOCAL_WORLD_SIZE",
              "WORLD_SIZE", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
              "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID"):
        assert k in os.environ, k
    assert os.environ["TEST_SENTINEL_PARENT"] == "FOOBAR"
    if args.fail:
        raise RuntimeError("raising exception since --fail was passed")
    open(os.path.join(args.touch_file_dir, os.environ["RANK"]), "w").close()
"""

TEST_SCRIPT_SH = """\
    #!/bin/bash
    touch_file_dir=$1
    echo "creating ${touch_file_dir}/${RANK}"
    touch "${touch_file_dir}/${RANK}"
"""

IS_TORCHELASTIC_LAUNCHED_PY = """\
    import argparse
    import torch.distributed as dist
    p = argparse.ArgumentParser()
    p.add_argument("--out-file", "--out_file", type=str)
    args = p.parse_args()
    with open(args.out_file, "w") as out:
        out.write(f"{dist.is_torchelastic_launched()}")
"""


@pytest.fixture
def bin_dir(tmp_path):
    d = tmp_path / "bin"
    d.mkdir()
    for name, body in (("test_script.py", TEST_SCRIPT_PY), ("test_script.sh", TEST_SCRIPT_SH),
                       ("test_script_is_torchelastic_launched.py", IS_TORCHELASTIC_LAUNCHED_PY)):
        (d / name).write_text(textwrap.dedent(body))
        (d / name).chmod(0o755)
    return d


@pytest.fixture
def test_dir(tmp_path):
    d = tmp_path / "touched"
    d.mkdir()
    return d


def env(**extra) -> dict:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("PET_", "TORCHELASTIC_"))}
    e["PATH"] = f"{VENV_BIN}:{e.get('PATH', '/usr/bin:/bin')}"
    e["TEST_SENTINEL_PARENT"] = "FOOBAR"
    e.update(extra)
    return e


def launch(args, extra_env=None, check=True) -> subprocess.CompletedProcess:
    r = subprocess.run([binary("tzrun"), *map(str, args)], env=env(**(extra_env or {})),
                       capture_output=True, text=True, timeout=TIMEOUT, errors="replace")
    if check:
        assert r.returncode == 0, r.stderr
    return r


def ranks(world_size):
    return {str(i) for i in range(world_size)}


def test_launch_user_script_python(bin_dir, test_dir):
    launch(["--nnodes=1", "--nproc-per-node=4", f"--rdzv-id={uuid.uuid4().int}",
            f"--master-port={free_port()}", "--monitor-interval=1", "--start-method=spawn",
            bin_dir / "test_script.py", f"--touch-file-dir={test_dir}"])
    assert ranks(4) == set(os.listdir(test_dir))


def test_launch_user_script_python_caffe2_bc(bin_dir, test_dir):
    launch(["--nnodes=1", "--nproc-per-node=4", "--monitor-interval=1", "--start-method=spawn",
            "--master-addr=localhost", f"--master-port={free_port()}", "--node-rank=0",
            bin_dir / "test_script.py", f"--touch-file-dir={test_dir}"])
    assert ranks(4) == set(os.listdir(test_dir))


@pytest.mark.parametrize("nproc", [None, "4"])
def test_launch_user_script_bash(bin_dir, test_dir, nproc):
    args = ["--nnodes=1", f"--rdzv-id={uuid.uuid4().int}", f"--master-port={free_port()}",
            "--monitor-interval=1", "--start-method=spawn", "--no-python"]
    if nproc:
        args.insert(1, f"--nproc-per-node={nproc}")
    script_args = [bin_dir / "test_script.sh", test_dir]
    # --no-python cannot be used with --module (torchrun: ValueError)
    assert launch(args + ["--module"] + script_args, check=False).returncode == 2
    launch(args + script_args)
    assert ranks(int(nproc or 1)) == set(os.listdir(test_dir))


def test_launch_with_env_vars(bin_dir, test_dir):
    pet = {"PET_NNODES": "1", "PET_NPROC_PER_NODE": "4", "PET_RDZV_ID": str(uuid.uuid4().int),
           "PET_MONITOR_INTERVAL": "1", "PET_START_METHOD": "spawn", "PET_NO_PYTHON": "1",
           "PET_MASTER_PORT": str(free_port())}
    script_args = [bin_dir / "test_script.sh", test_dir]
    assert launch(script_args, {**pet, "PET_MODULE": "1"}, check=False).returncode == 2
    launch(script_args, {**pet, "PET_MODULE": "0"})
    assert ranks(4) == set(os.listdir(test_dir))


def test_nproc_launch_unknown_configurations(bin_dir, test_dir):
    r = launch(["--nnodes=1", "--nproc-per-node=unknown", "--no-python",
                bin_dir / "test_script.sh", test_dir], check=False)
    assert r.returncode == 2 and "Unsupported nproc_per_node value" in r.stderr


def elastic_args(extra_conf=""):
    return ["--nnodes=1:2", "--nproc-per-node=4", "--rdzv-backend=c10d",
            f"--rdzv-endpoint=localhost:{free_port()}",
            f"--rdzv-conf=join_timeout=5,last_call_timeout=1,timeout=5{extra_conf}",
            f"--rdzv-id={uuid.uuid4().int}", "--monitor-interval=1", "--start-method=spawn"]


def test_launch_elastic(bin_dir, test_dir):
    launch(elastic_args() + [bin_dir / "test_script.py", f"--touch-file-dir={test_dir}"])
    assert ranks(4) == set(os.listdir(test_dir))


def test_launch_elastic_worker_raise_exception(bin_dir, test_dir):
    # torchrun raises ChildFailedError; tzrun exits with the worker's code and reports it.
    r = launch(elastic_args() + ["--max-restarts=0", bin_dir / "test_script.py", "--fail"],
               check=False)
    assert r.returncode == 1
    assert "raising exception since --fail was passed" in r.stderr


def test_launch_standalone(bin_dir, test_dir):
    launch(["--nnodes=1", "--nproc-per-node=4", "--standalone", "--monitor-interval=1",
            "--start-method=spawn", bin_dir / "test_script.py", f"--touch-file-dir={test_dir}"])
    assert ranks(4) == set(os.listdir(test_dir))


def test_launch_run_path(bin_dir, test_dir):
    launch(["--run-path", "--nnodes=1", "--nproc-per-node=4", f"--master-port={free_port()}",
            "--monitor-interval=1", "--start-method=spawn", bin_dir / "test_script.py",
            f"--touch-file-dir={test_dir}"])
    assert ranks(4) == set(os.listdir(test_dir))


def test_launch_elastic_multiple_agents(bin_dir, test_dir):
    port = free_port()
    args = ["--nnodes=1:2", "--nproc-per-node=4", "--rdzv-backend=c10d",
            f"--rdzv-endpoint=localhost:{port}", "--rdzv_conf=timeout=5",
            f"--rdzv-id={uuid.uuid4().int}", "--monitor-interval=1", "--start-method=spawn",
            bin_dir / "test_script.py", f"--touch-file-dir={test_dir}"]
    other = subprocess.Popen([binary("tzrun"), *map(str, args)], env=env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    launch(args)
    _, err = other.communicate(timeout=TIMEOUT)
    assert 0 == other.returncode, err
    assert ranks(8) == set(os.listdir(test_dir))


def test_is_torchelastic_launched(bin_dir, test_dir):
    out_file = test_dir / "out"
    launch(["--run-path", "--nnodes=1", "--nproc-per-node=1", f"--master-port={free_port()}",
            "--monitor-interval=1", bin_dir / "test_script_is_torchelastic_launched.py",
            f"--out-file={out_file}"])
    assert out_file.read_text() == "True"


def test_logs_logs_spec_entrypoint_must_be_defined(bin_dir):
    r = launch(["--run-path", "--nnodes=1", "--nproc-per-node=1", "--monitor-interval=1",
                "--logs_specs=DOESNOT_EXIST", bin_dir / "test_script_is_torchelastic_launched.py"],
               check=False)
    assert r.returncode == 2


def test_capture_logs_using_default_logs_specs(bin_dir, test_dir):
    r = launch(["--nnodes=1", "--nproc-per-node=4", f"--rdzv-id={uuid.uuid4().int}",
                f"--master-port={free_port()}", "--redirect=3", "--tee=3",
                "--monitor-interval=1", "--start-method=spawn", "--no-python",
                bin_dir / "test_script.sh", test_dir],
               {"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": "[rank${rank}]: "})
    for i in range(4):
        assert f"[rank{i}]: creating " in r.stdout

"""Worker-environment parity: real torchrun (from the venv) and tzrun, same flags,
same worker that dumps its environment.  Every variable torchrun sets must be
present under tzrun with an equal value, except the documented random ones
(run id under --standalone, the store port under --standalone, the error-file path).
"""
import json
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import binary, free_port, torchrun_exe

pytestmark = pytest.mark.needs_torchrun  # every test runs the real torchrun

DUMP = r'''
import json, os, sys
with open(os.path.join(os.environ["ENV_DUMP_DIR"], f"env-{os.environ['LOCAL_RANK']}.json"), "w") as f:
    json.dump({"env": dict(os.environ), "argv": sys.argv[1:]}, f)
'''

# Values that are random per run (documented in docs/launcher.md).
RANDOM_ALWAYS = {"TORCHELASTIC_ERROR_FILE"}
RANDOM_STANDALONE = {"TORCHELASTIC_RUN_ID", "MASTER_PORT"}


def run_dump(launcher: list[str], flags: list[str], tmp: pathlib.Path, extra_env: dict) -> dict:
    tmp.mkdir(parents=True, exist_ok=True)
    script = tmp / "dump_env.py"
    script.write_text(DUMP)
    venv_bin = str(pathlib.Path(sys.executable).parent)
    env = {
        "PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin",
        "HOME": os.environ.get("HOME", "/root"),
        "LANG": "C.UTF-8",  # avoid Python's PEP 538 locale coercion differences
        "ENV_DUMP_DIR": str(tmp),
        **extra_env,
    }
    proc = subprocess.run(launcher + flags + [str(script), "--lr", "0.1", "${local_rank}"],
                          env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, f"{launcher[0]} failed:\n{proc.stdout}\n{proc.stderr}"
    dumps = {}
    for p in sorted(tmp.glob("env-*.json")):
        d = json.loads(p.read_text())
        dumps[int(p.stem.split("-")[1])] = d
    return dumps, env, proc


CASES = {
    "static_2": (["--nproc-per-node=2", "--master-port", "{port}"], {}),
    "static_inherited_platform_rank": (["--nproc_per_node", "3", "--master_port={port}"],
                                       {"RANK": "5", "WORLD_SIZE": "64", "LOCAL_RANK": "9"}),
    "role_restarts_omp_set": (["--nproc-per-node=2", "--role", "trainer", "--max-restarts=2",
                               "--master-port={port}"], {"OMP_NUM_THREADS": "4"}),
    "standalone": (["--standalone", "--nproc-per-node=2"], {}),
    "rdzv_id": (["--nproc-per-node=1", "--rdzv-id", "job42", "--master-port", "{port}"],
                {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "0"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_worker_env_matches_torchrun(case, tmp_path):
    torchrun = torchrun_exe()
    if not torchrun:
        pytest.skip("torchrun not found in the venv: run scripts/setup.sh")
    flags_t, extra = CASES[case]
    port = free_port()
    flags = [f.replace("{port}", str(port)) for f in flags_t]

    ref, base_env, _ = run_dump([torchrun], flags, tmp_path / "torchrun", extra)
    ours, _, _ = run_dump([binary("tzrun")], flags, tmp_path / "tzrun", extra)
    assert sorted(ref) == sorted(ours), "different number of workers"

    random_keys = RANDOM_ALWAYS | (RANDOM_STANDALONE if "--standalone" in flags else set())
    for rank, ref_dump in ref.items():
        ref_env, our_env = ref_dump["env"], ours[rank]["env"]
        # argv after the script, incl. ${local_rank} substitution
        assert ours[rank]["argv"] == ref_dump["argv"]
        # every key torchrun sets or changes
        set_by_torchrun = {k for k, v in ref_env.items()
                           if base_env.get(k) != v or k not in base_env}
        missing = sorted(set_by_torchrun - set(our_env))
        assert not missing, f"tzrun did not set {missing} for local rank {rank}"
        diffs = {k: (ref_env[k], our_env[k]) for k in set_by_torchrun - random_keys
                 if ref_env[k] != our_env[k]}
        assert not diffs, f"local rank {rank}: (torchrun, tzrun) differ: {diffs}"
        extra_keys = sorted(set(our_env) - set(ref_env))
        assert not extra_keys, f"tzrun sets variables torchrun does not: {extra_keys}"
        for k in random_keys:
            assert our_env.get(k), f"{k} is empty under tzrun"
        # the error file sits in the per-attempt, per-rank layout
        assert our_env["TORCHELASTIC_ERROR_FILE"].endswith(f"/attempt_0/{rank}/error.json")

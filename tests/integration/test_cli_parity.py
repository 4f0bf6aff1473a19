"""Command-line parity between tzrun and the real torchrun 2.11 (the venv's).

For each argument vector we ask torchrun's own parser which verdict it reaches
without launching anything (argparse exit 2 = "usage"; an exception from
config_from_args = "invalid"; else "ok") and check that `tzrun --dry-run` exits
0 for "ok" and 2 for both kinds of rejection. Deliberate differences are listed
with a reason (docs/launcher.md, "Flags" section). Also checks that tzrun's
--help shows each torchrun option exactly as torchrun's --help does.
"""
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import torchrun_exe

# (args, extra env, torchrun verdict, tzrun exit code, reason when they differ)
OK, USAGE, INVALID = "ok", "usage", "invalid"
CASES = [
    # --- accepted by both ---
    (["x.py"], {}, OK, 0, ""),
    (["--nproc-per-node", "2", "x.py", "--lr", "1"], {}, OK, 0, ""),
    (["--nproc_per_node=2", "x.py"], {}, OK, 0, ""),
    (["--nnodes", "1:1", "--rdzv-backend", "c10d", "--rdzv-endpoint", "localhost:29400", "x.py"], {}, OK, 0, ""),
    (["--standalone", "--nproc-per-node", "2", "x.py"], {}, OK, 0, ""),
    (["-r", "3", "-t", "0:1,1:2", "x.py"], {}, OK, 0, ""),
    (["-r3", "x.py"], {}, OK, 0, ""),
    (["-mt3", "pkg.mod"], {}, OK, 0, ""),
    (["--max-restarts=3", "--monitor-interval", "0.5", "x.py"], {}, OK, 0, ""),
    (["--max-restarts", "1_0", "x.py"], {}, OK, 0, ""),
    (["--start-method", "fork", "x.py"], {}, OK, 0, ""),
    (["--no-python", "/bin/echo", "hi"], {}, OK, 0, ""),
    (["-m", "pkg.mod", "--flag"], {}, OK, 0, ""),
    (["--run-path", "-m", "--no-python", "{tmp}/x.py"], {}, OK, 0, ""),
    (["--rdzv-conf", "join_timeout=5, read_timeout = 10", "x.py"], {}, OK, 0, ""),
    # c10d reads no "timeout" key: any value is ignored (only static/etcd read it).
    (["--standalone", "--rdzv-conf", "timeout=bad", "x.py"], {}, OK, 0, ""),
    (["--logs-specs", "default", "x.py"], {}, OK, 0, ""),
    (["--local-ranks-filter", "0,1", "x.py"], {}, OK, 0, ""),
    (["--duplicate-stdout-filters", "a,,b", "--duplicate_stderr_filters=c", "x.py"], {}, OK, 0, ""),
    (["--signals-to-handle", "SIGTERM,SIGUSR1", "x.py"], {}, OK, 0, ""),
    (["--virtual-local-rank", "x.py"], {}, OK, 0, ""),
    (["--master-addr", "127.0.0.1", "--master-port", "29511", "x.py"], {}, OK, 0, ""),
    (["--nproc-per", "2", "--stand", "x.py"], {}, OK, 0, ""),
    (["--log-", "{tmp}/logs", "x.py"], {}, OK, 0, ""),
    (["--", "x.py", "a"], {}, OK, 0, ""),
    (["x.py", "--nproc-per-node", "3", "--foo"], {}, OK, 0, ""),
    (["--role", "trainer", "--event-log-handler", "console", "x.py"], {}, OK, 0, ""),
    (["--nproc-per-node", "cpu", "x.py"], {}, OK, 0, ""),
    (["x.py"], {"PET_NPROC_PER_NODE": "2", "PET_MAX_RESTARTS": "1"}, OK, 0, ""),
    (["x.py"], {"PET_STANDALONE": "1"}, OK, 0, ""),
    (["--standalone", "x.py"], {"PET_STANDALONE": "0"}, OK, 0, ""),
    # --- argparse usage errors in both ---
    ([], {}, USAGE, 2, ""),
    (["--nnodes", "2"], {}, USAGE, 2, ""),
    (["--foo", "x.py"], {}, USAGE, 2, ""),
    (["-x", "x.py"], {}, USAGE, 2, ""),
    (["--n", "2", "x.py"], {}, USAGE, 2, ""),
    (["--nproc", "2", "x.py"], {}, USAGE, 2, ""),
    (["--max-restarts", "x", "x.py"], {}, USAGE, 2, ""),
    (["--master-port", "0x10", "x.py"], {}, USAGE, 2, ""),
    (["--monitor-interval", "fast", "x.py"], {}, USAGE, 2, ""),
    (["--start-method", "bogus", "x.py"], {}, USAGE, 2, ""),
    (["--numa-binding", "cpu", "x.py"], {}, USAGE, 2, ""),
    (["--standalone=1", "x.py"], {}, USAGE, 2, ""),
    (["-mfoo", "x.py"], {}, USAGE, 2, ""),
    (["--rdzv-conf", "-a", "x.py"], {}, USAGE, 2, ""),
    (["--nnodes"], {}, USAGE, 2, ""),
    (["x.py"], {"PET_MAX_RESTARTS": "x"}, USAGE, 2, ""),
    # --- torchrun raises later (exit 1); tzrun reports them as usage errors ---
    (["--nnodes", "0", "x.py"], {}, INVALID, 2, ""),
    (["--nnodes", "3:2", "x.py"], {}, INVALID, 2, ""),
    (["--nnodes", "1:2:3", "x.py"], {}, INVALID, 2, ""),
    (["--max-restarts", "-1", "x.py"], {}, INVALID, 2, ""),
    (["--nproc-per-node", "many", "x.py"], {}, INVALID, 2, ""),
    (["--nproc-per-node", "xpu", "x.py"], {}, INVALID, 2, ""),
    (["--rdzv-conf", "=1", "x.py"], {}, INVALID, 2, ""),
    (["--logs-specs", "DOESNOT_EXIST", "x.py"], {}, INVALID, 2, ""),
    (["--rdzv-conf", "a", "x.py"], {}, INVALID, 2, ""),
    (["-r", "4", "x.py"], {}, INVALID, 2, ""),
    (["-t", "0:1,x", "x.py"], {}, INVALID, 2, ""),
    (["--local-ranks-filter", "a", "x.py"], {}, INVALID, 2, ""),
    (["-m", "--no-python", "x"], {}, INVALID, 2, ""),
    # --- deliberate differences ---
    (["--nproc-per-node", "0", "x.py"], {}, OK, 2, "tzrun validates nproc > 0 up front"),
    (["--monitor-interval", "0", "x.py"], {}, OK, 2, "tzrun validates monitor-interval > 0"),
    (["--master-port", "70000", "x.py"], {}, OK, 2, "tzrun validates the port range"),
    (["--node-rank", "1", "x.py"], {}, OK, 2, "static rendezvous: node rank must be < nnodes"),
    (["--signals-to-handle", "SIGFOO", "x.py"], {}, OK, 2, "torchrun only warns at runtime"),
    (["--event-log-handler", "foo", "x.py"], {}, OK, 2, "torchrun fails at runtime (KeyError)"),
    (["x.py"], {"PET_START_METHOD": "bogus"}, OK, 2, "argparse does not check choices of defaults"),
    (["x.py", "--n", "3"], {}, USAGE, 0, "torchrun inspects tokens after the script"),
    (["-r", "0:1,12:2", "x.py"], {}, INVALID, 0, "multi-digit local ranks in -r/-t maps"),
    (["x.py"], {"PET_STANDALONE": "true"}, INVALID, 0, "true/yes/on accepted for PET_ flags"),
    (["x.py"], {"PET_MAX_RESTARTS": ""}, USAGE, 0, "empty PET_ value means unset"),
    (["x.py"], {"PET_NNODES": ""}, INVALID, 0, "empty PET_ value means unset"),
]

ORACLE = r"""
import contextlib, io, json, os, sys
import torch.distributed.run as run_mod

def verdict(args, env):
    saved = dict(os.environ)
    try:
        for k in [k for k in os.environ if k.startswith("PET_")]:
            del os.environ[k]
        os.environ.update(env)
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                ns = run_mod.parse_args(args)
        except SystemExit as e:
            return "usage" if e.code == 2 else "exit%s" % e.code
        except Exception:  # check_env's int() on e.g. PET_STANDALONE=true
            return "invalid"
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                if ns.standalone:  # what run() does before config_from_args
                    ns.rdzv_backend, ns.rdzv_endpoint = "c10d", "localhost:0"
                run_mod.config_from_args(ns)
        except Exception:
            return "invalid"
        return "ok"
    finally:
        os.environ.clear()
        os.environ.update(saved)

json.dump([verdict(c["args"], c["env"]) for c in json.load(sys.stdin)], sys.stdout)
"""


def _expand(args, tmp):
    return [a.replace("{tmp}", str(tmp)) for a in args]


def _clean_env(extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PET_")}
    for k in ("LOGLEVEL", "TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "CUDA_VISIBLE_DEVICES"):
        env.pop(k, None)
    env["CUDA_VISIBLE_DEVICES"] = ""  # same answer with or without GPUs
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def torchrun_verdicts(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("oracle")
    payload = json.dumps([{"args": _expand(a, tmp), "env": e} for a, e, *_ in CASES])
    env = _clean_env({})
    out = subprocess.run([sys.executable, "-c", ORACLE], input=payload, capture_output=True,
                         text=True, env=env, cwd=tmp, timeout=300)
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout)


def _case_id(case):
    args, env, *_ = case
    return " ".join([f"{k}={v}" for k, v in env.items()] + args) or "<no args>"


@pytest.mark.parametrize("index", range(len(CASES)), ids=[_case_id(c) for c in CASES])
def test_verdict_matches_torchrun(index, torchrun_verdicts, tzrun_bin, tmp_path):
    args, extra_env, expected_torchrun, expected_rc, reason = CASES[index]
    assert torchrun_verdicts[index] == expected_torchrun, (
        f"torchrun's verdict changed: {torchrun_verdicts[index]} (table says {expected_torchrun})")
    if not reason:  # no documented difference: tzrun must agree with torchrun
        assert expected_rc == (0 if expected_torchrun == OK else 2)
    (tmp_path / "x.py").write_text("print('hi')\n")
    out = subprocess.run([tzrun_bin, "--dry-run", *_expand(args, tmp_path)], capture_output=True,
                         text=True, env=_clean_env(extra_env), cwd=tmp_path, timeout=60)
    assert out.returncode == expected_rc, (
        f"tzrun exit {out.returncode}, expected {expected_rc} ({reason or 'parity'})\n"
        f"stdout: {out.stdout[-2000:]}\nstderr: {out.stderr[-2000:]}")
    if expected_rc == 2:
        assert "tzrun: error: " in out.stderr
        assert out.stderr.startswith("usage: tzrun ")


@pytest.mark.needs_torchrun
def test_real_torchrun_exits_2_on_usage_errors(tmp_path):
    """The oracle's 'usage' is what the real torchrun process reports as exit 2."""
    exe = torchrun_exe()
    if not exe:
        pytest.skip("torchrun is not installed next to this python")
    for args in (["--foo", "x.py"], ["--max-restarts", "x", "x.py"]):
        out = subprocess.run([exe, *args], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                             env=_clean_env({}))
        assert out.returncode == 2, out.stderr[-2000:]
        assert "torchrun: error: " in out.stderr


def _help_blocks(text):
    """{invocation: [raw lines]} for the options: section of an argparse --help."""
    blocks, current = {}, None
    section = text.split("\noptions:\n", 1)[1].split("\n\n", 1)[0]
    for line in section.splitlines():
        if re.match(r"^  -", line):
            invocation = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
            current = blocks.setdefault(invocation, [])
        if current is not None:
            current.append(line)
    return blocks


@pytest.mark.needs_torchrun
@pytest.mark.parametrize("columns", ["80", "120"])
def test_help_shows_torchrun_options_like_torchrun(columns, tzrun_bin):
    exe = torchrun_exe()
    if not exe:
        pytest.skip("torchrun is not installed next to this python")
    env = _clean_env({"COLUMNS": columns})
    theirs = subprocess.run([exe, "--help"], capture_output=True, text=True, env=env, timeout=120)
    ours = subprocess.run([tzrun_bin, "--help"], capture_output=True, text=True, env=env, timeout=60)
    assert theirs.returncode == 0 and ours.returncode == 0, ours.stderr
    assert ours.stdout.startswith("usage: tzrun [-h] [--nnodes NNODES]")
    assert "\npositional arguments:\n  training_script " in ours.stdout
    theirs_blocks, ours_blocks = _help_blocks(theirs.stdout), _help_blocks(ours.stdout)
    # Same options in the same order, laid out line by line exactly as argparse
    # does (tzrun's --nproc-per-node help adds that xpu is not supported).
    assert list(theirs_blocks) == [k for k in ours_blocks if k in theirs_blocks]
    for invocation, lines in theirs_blocks.items():
        if invocation.startswith("--nproc-per-node"):
            assert ours_blocks[invocation][0] == lines[0]
            continue
        assert ours_blocks[invocation] == lines, invocation


def test_version(tzrun_bin):
    out = subprocess.run([tzrun_bin, "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    assert re.fullmatch(r"tzrun \d+\.\d+\.\d+\S* \(torchrun 2\.11 compatible\)\n", out.stdout)


def test_c10d_launch_ignores_rdzv_conf_timeout(tzrun_bin):
    """torchrun 2.11 reads rdzv_conf `timeout` only for static/etcd: a real --standalone (c10d)
    launch with a value that is not a number runs, as torchrun's does."""
    proc = subprocess.run([tzrun_bin, "--standalone", "--nproc-per-node=1", "--rdzv-conf",
                           "timeout=bad", "--no-python", "true"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]

"""Restarts of the real tzrun binary (issue 15, "Restarts"), real agents and python workers:

- TORCHELASTIC_RESTART_COUNT counts this agent's own failure restarts, as torchrun 2.11
  (spec.max_restarts - remaining_restarts): two c10d agents on 127.0.0.1, node a fails in its
  first attempt, node b in its second; a sees 0,1,1 and b 0,0,1 (tzrun used the round's
  maximum: 0,1,1 on both). Compared with the real torchrun side by side (needs_torchrun);
- membership-change restarts are counted (summary JSON) and bounded by
  --max-membership-restarts: a peer that keeps leaving and rejoining stops the job (exit 125)
  instead of restarting the healthy node's workers forever;
- failures not worth retrying: --no-restart-exit-codes (and PET_NO_RESTART_EXIT_CODES) and a
  worker error file with extraInfo.retryable == "false" stop the whole job (every node, c10d
  and static) at once, whatever --max-restarts allows, and tzrun says why.

Workers are stdlib python (start in milliseconds); the box has 2 shared cores, so time bounds
are generous.
"""
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from conftest import binary, free_port, torchrun_exe

VENV_BIN = str(pathlib.Path(sys.executable).parent)
CONF = "join_timeout=60,last_call_timeout=1,keep_alive_interval=1,keep_alive_max_attempt=3"
MEMBERSHIP_EXIT = 125  # kMembershipRestartsExhaustedExitCode

# argv: OUT NODE FAIL_PLAN LAST. Appends {"node", "k" (its k-th start), "restart"} to
# OUT/starts.jsonl, waits until every node in OUT/nodes has started k times (so a round's
# workers all run before one of them fails), then: exits FAIL_CODE (env, default 1) when k is in
# FAIL_PLAN for this node ("a:1,b:2"), exits 0 when k >= LAST, else sleeps. With
# NOT_RETRYABLE=1 a failing worker first writes its TORCHELASTIC_ERROR_FILE as tzrec_train does.
WORKER = r'''
import json, os, sys, time
out, node, plan, last = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
fails = {}
for item in filter(None, plan.split(",")):
    n, k = item.split(":")
    fails.setdefault(n, set()).add(int(k))
path = os.path.join(out, "starts.jsonl")
nodes = open(os.path.join(out, "nodes")).read().split()
def records():
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]
k = sum(1 for r in records() if r["node"] == node) + 1
with open(path, "a") as f:
    f.write(json.dumps({"node": node, "k": k, "pid": os.getpid(),
                        "restart": int(os.environ["TORCHELASTIC_RESTART_COUNT"])}) + "\n")
end = time.monotonic() + 60
while time.monotonic() < end:
    if all(sum(1 for r in records() if r["node"] == n) >= k for n in nodes):
        break
    time.sleep(0.05)
time.sleep(0.3)
if k in fails.get(node, ()):
    if os.environ.get("NOT_RETRYABLE") == "1":
        with open(os.environ["TORCHELASTIC_ERROR_FILE"], "w") as f:
            json.dump({"message": {"message": "ConfigError: no such feature 'x'",
                                   "extraInfo": {"timestamp": str(int(time.time())),
                                                 "retryable": "false"}}}, f)
    sys.exit(int(os.environ.get("FAIL_CODE", "1")))
if k >= last:
    sys.exit(0)
time.sleep(120)
'''


def clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PET_", "TORCHELASTIC_")) and k not in
           ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "PYTHON_EXEC")}
    env["PATH"] = VENV_BIN + os.pathsep + env.get("PATH", "/usr/bin:/bin")
    env.setdefault("LOGLEVEL", "INFO")  # torchrun needs upper case
    env.update(extra)
    return env


class Node:
    """One agent (tzrun or torchrun) with its output in a log file."""

    def __init__(self, argv, log: pathlib.Path, env: dict):
        self.log_path = log
        self.log = open(log, "a")
        self.proc = subprocess.Popen(argv, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     text=True)

    def wait(self, timeout):
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self.log.flush()

    def text(self):
        self.log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.fixture
def nodes():
    started = []

    def start(argv, log, env=None):
        n = Node(argv, log, env or clean_env())
        started.append(n)
        return n

    yield start
    for n in started:
        n.stop()


def logs(*nodes_):
    return "\n".join(f"===== {n.log_path.name} =====\n{n.text()[-5000:]}" for n in nodes_)


def setup(out: pathlib.Path, names=("a", "b")) -> pathlib.Path:
    (out / "nodes").write_text(" ".join(names))
    script = out / "worker.py"
    script.write_text(WORKER)
    return script


def starts(out: pathlib.Path):
    p = out / "starts.jsonl"
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


def counts(out: pathlib.Path) -> dict:
    """node -> its workers' TORCHELASTIC_RESTART_COUNT, in start order."""
    result = {}
    for r in sorted(starts(out), key=lambda r: (r["node"], r["k"])):
        result.setdefault(r["node"], []).append(r["restart"])
    return result


def c10d_argv(launcher, port, addr, *flags):
    return [*launcher, "--nnodes=2", "--nproc-per-node=1", "--rdzv-backend=c10d",
            f"--rdzv-endpoint=127.0.0.1:{port}", "--rdzv-id=restarts", f"--rdzv-conf={CONF}",
            f"--local-addr={addr}", *flags]


def run_two_c10d(nodes, out, launcher, plan, last, flags=(), env=None):
    """Agents a (127.0.0.2, hosts the store) and b (127.0.0.3) run WORKER with `plan`;
    "{name}" in a flag is the agent's name."""
    script = setup(out)
    port = free_port()
    agents = []
    for name, addr in (("a", "127.0.0.2"), ("b", "127.0.0.3")):
        argv = c10d_argv(launcher, port, addr, *(f.format(name=name) for f in flags),
                         str(script), str(out), name, plan, str(last))
        agents.append(nodes(argv, out / f"{name}.log", env))
        time.sleep(0.5)  # a first: it hosts the rendezvous store
    return agents


# --------------------------------------------------------------------------------------
# 1. TORCHELASTIC_RESTART_COUNT


EXPECTED_COUNTS = {"a": [0, 1, 1], "b": [0, 0, 1]}  # torchrun 2.11, measured side by side


def test_restart_count_is_each_agents_own_failure_restarts(tmp_path, nodes):
    a, b = run_two_c10d(nodes, tmp_path, [binary("tzrun")], "a:1,b:2", 3,
                        ["--max-restarts=3", f"--summary-json={tmp_path}/{{name}}.json"])
    assert a.wait(150) == 0, logs(a, b)
    assert b.wait(60) == 0, logs(a, b)
    # a failed once (1 failure restart), then restarted for b's failure (membership).
    assert counts(tmp_path) == EXPECTED_COUNTS, logs(a, b)
    summary = json.loads((tmp_path / "a.json").read_text())
    assert (summary["restarts"], summary["failure_restarts"],
            summary["membership_restarts"]) == (2, 1, 1), summary
    assert [att[0]["restarts"] for att in summary["attempts"]] == [0, 1, 1], summary
    summary = json.loads((tmp_path / "b.json").read_text())
    assert (summary["failure_restarts"], summary["membership_restarts"]) == (1, 1), summary


@pytest.mark.needs_torchrun
def test_restart_count_matches_torchrun(tmp_path, nodes):
    exe = torchrun_exe()
    if not exe:
        pytest.skip("torchrun is not installed in the venv")
    seen = {}
    for name, launcher in (("torchrun", [exe]), ("tzrun", [binary("tzrun")])):
        out = tmp_path / name
        out.mkdir()
        a, b = run_two_c10d(nodes, out, launcher, "a:1,b:2", 3, ["--max-restarts=3"])
        assert a.wait(180) == 0, logs(a, b)
        assert b.wait(60) == 0, logs(a, b)
        seen[name] = counts(out)
    assert seen["tzrun"] == seen["torchrun"] == EXPECTED_COUNTS, seen


# --------------------------------------------------------------------------------------
# 2. membership restarts: counted and bounded


def test_flapping_peer_is_bounded_by_max_membership_restarts(tmp_path, nodes):
    """b leaves (SIGTERM: it leaves the round at once) and rejoins, again and again; with
    --max-restarts=0 a's healthy workers restarted every time (11 times in the report). With
    --max-membership-restarts=2, a's third membership change stops the job with exit 125 (and
    closes the rendezvous with that code, so that no node goes on: see the unit tests)."""
    script = setup(tmp_path, names=("a",))  # a's workers do not wait for b's
    port = free_port()
    common = ["--max-restarts=0", "--max-membership-restarts=2"]
    a = nodes(c10d_argv([binary("tzrun")], port, "127.0.0.2", *common,
                        f"--summary-json={tmp_path / 'a.json'}", str(script), str(tmp_path),
                        "a", "", "99"), tmp_path / "a.log")
    time.sleep(0.5)
    bs = []
    for cycle in range(1, 4):
        b = nodes(c10d_argv([binary("tzrun")], port, "127.0.0.3", *common, str(script),
                            str(tmp_path), "b", "", "99"), tmp_path / "b.log")
        bs.append(b)
        deadline = time.monotonic() + 90
        # Round `cycle` runs both nodes' workers (--nnodes=2); wait for both records: b
        # leaving right after its own record could stop a's worker before it wrote its own.
        while min(sum(1 for r in starts(tmp_path) if r["node"] == n) for n in "ab") < cycle:
            assert time.monotonic() < deadline and b.proc.poll() is None, logs(a, *bs)
            time.sleep(0.1)
        if a.proc.poll() is not None:
            break
        b.proc.send_signal(signal.SIGTERM)
        assert b.wait(60) == 128 + signal.SIGTERM, logs(a, b)
    assert a.wait(90) == MEMBERSHIP_EXIT, logs(a, *bs)
    text = a.text()
    assert "already restarted its worker group 2 time(s) for membership changes " \
           "(--max-membership-restarts=2)" in text, logs(a)
    a_starts = [r for r in starts(tmp_path) if r["node"] == "a"]
    assert all(r["restart"] == 0 for r in a_starts), a_starts  # never a failure restart
    assert len(a_starts) == 3, a_starts  # the first start and two membership restarts
    summary = json.loads((tmp_path / "a.json").read_text())
    assert summary["membership_restarts"] == 2 and summary["failure_restarts"] == 0, summary
    assert summary["no_restart_reason"] == "--max-membership-restarts=2 used up", summary


def test_membership_bound_stops_every_node(tmp_path, nodes):
    """c (hosts the store, default bound) and a (--max-membership-restarts=1) run, b joins and
    leaves: a's second membership change stops the job, and c stops with a's 125 because a
    closed the rendezvous (not because the store went away: c hosts it)."""
    script = setup(tmp_path, names=("a",))
    port = free_port()
    tz = [binary("tzrun")]
    argv = lambda addr, name, *extra: c10d_argv(  # noqa: E731
        tz, port, addr, "--nnodes=2:3", "--max-restarts=0", *extra, str(script),
        str(tmp_path), name, "", "99")
    c = nodes(argv("127.0.0.4", "c"), tmp_path / "c.log")
    time.sleep(0.5)
    a = nodes(argv("127.0.0.2", "a", "--max-membership-restarts=1"), tmp_path / "a.log")
    deadline = time.monotonic() + 90
    while not any(r["node"] == "c" for r in starts(tmp_path)):
        assert time.monotonic() < deadline, logs(a, c)
        time.sleep(0.1)
    b = nodes(argv("127.0.0.3", "b"), tmp_path / "b.log")  # scale-up: a's first restart
    while sum(1 for r in starts(tmp_path) if r["node"] == "b") < 1:
        assert time.monotonic() < deadline and b.proc.poll() is None, logs(a, b, c)
        time.sleep(0.1)
    b.proc.send_signal(signal.SIGTERM)  # b leaves: a's second membership change
    assert a.wait(90) == MEMBERSHIP_EXIT, logs(a, b, c)
    assert c.wait(90) == MEMBERSHIP_EXIT, logs(a, b, c)
    assert "(--max-membership-restarts=1); stopping the job with exit code 125" in a.text(), \
        logs(a)
    assert "was closed by node" in c.text() and "(exit code 125)" in c.text(), logs(c)


# --------------------------------------------------------------------------------------
# 3. failures not worth retrying


def single_node(tmp_path, *flags, env=None, plan="a:1", code=None):
    script = setup(tmp_path, names=("a",))
    extra = {"FAIL_CODE": str(code)} if code is not None else {}
    extra.update(env or {})
    argv = [binary("tzrun"), f"--master-port={free_port()}", "--nproc-per-node=1", *flags,
            f"--summary-json={tmp_path / 's.json'}", str(script), str(tmp_path), "a", plan, "2"]
    proc = subprocess.run(argv, env=clean_env(**extra), capture_output=True, text=True,
                          timeout=120)
    return proc, json.loads((tmp_path / "s.json").read_text())


def details(proc) -> str:
    return f"rc={proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"


@pytest.mark.parametrize("via", ["flag", "env"])
def test_listed_exit_code_is_not_retried(tmp_path, via):
    flags = ["--max-restarts=3"]
    env = {}
    if via == "flag":
        flags.append("--no-restart-exit-codes=2,3")
    else:
        env["PET_NO_RESTART_EXIT_CODES"] = "2,3"
    proc, summary = single_node(tmp_path, *flags, env=env, code=3)
    assert proc.returncode == 3, details(proc)
    assert len(starts(tmp_path)) == 1, details(proc)  # one attempt: no retry
    assert ("Worker group FAILED and will not be restarted: rank 0 (local_rank 0) failed with "
            "exit code 3, which --no-restart-exit-codes lists as not worth retrying; "
            "3/3 attempts left unused; stopping the job") in proc.stderr, details(proc)
    assert "Root Cause (first observed failure):" in proc.stderr, details(proc)
    assert summary["failure_restarts"] == 0 and summary["outcome"] == "failed", summary
    assert "--no-restart-exit-codes" in summary["no_restart_reason"], summary


def test_unlisted_exit_code_is_still_retried(tmp_path):
    proc, summary = single_node(tmp_path, "--max-restarts=3", "--no-restart-exit-codes=2,3",
                                code=1)
    assert proc.returncode == 0, details(proc)
    assert counts(tmp_path) == {"a": [0, 1]}, details(proc)
    assert summary["failure_restarts"] == 1 and summary["no_restart_reason"] is None, summary


def test_error_file_marked_not_retryable_stops_retries(tmp_path):
    proc, summary = single_node(tmp_path, "--max-restarts=3", env={"NOT_RETRYABLE": "1"},
                                code=2)
    assert proc.returncode == 2, details(proc)
    assert len(starts(tmp_path)) == 1, details(proc)
    assert ("Worker group FAILED and will not be restarted: rank 0 (local_rank 0) failed with "
            "exit code 2 and its error file marks the failure not retryable "
            "(extraInfo.retryable = \"false\"): ConfigError: no such feature 'x'") \
        in proc.stderr, details(proc)
    assert "tzrun: not restarted: rank 0 (local_rank 0)" in proc.stderr, details(proc)
    assert "ConfigError: no such feature 'x'" in summary["no_restart_reason"], summary


@pytest.mark.parametrize("backend", ["c10d", "static"])
def test_not_retryable_failure_stops_every_node(tmp_path, nodes, backend):
    """b's worker fails for good (error file) with restarts left: a stops too, with b's code,
    and neither node starts a second attempt."""
    env = clean_env(NOT_RETRYABLE="1", FAIL_CODE="2")
    flags = ["--max-restarts=3"]
    if backend == "c10d":
        a, b = run_two_c10d(nodes, tmp_path, [binary("tzrun")], "b:1", 9, flags, env=env)
    else:
        script = setup(tmp_path)
        port = free_port()
        a, b = [nodes([binary("tzrun"), "--nnodes=2", f"--node-rank={r}", f"--master-port={port}",
                       "--nproc-per-node=1", *flags, str(script), str(tmp_path), name, "b:1",
                       "9"], tmp_path / f"{name}.log", env)
                for r, name in ((0, "a"), (1, "b"))]
    t0 = time.monotonic()
    assert b.wait(120) == 2, logs(a, b)
    assert a.wait(60) == 2, logs(a, b)
    assert time.monotonic() - t0 < 60, logs(a, b)  # a's worker would sleep 120 s
    assert "will not be restarted: rank 1 (local_rank 0) failed with exit code 2" in b.text(), \
        logs(b)
    assert sorted((r["node"], r["k"]) for r in starts(tmp_path)) == [("a", 1), ("b", 1)], \
        logs(a, b)


# --------------------------------------------------------------------------------------
# the flags' values


@pytest.mark.parametrize("flag,message", [
    ("--no-restart-exit-codes=2,x", "not an exit code in 1..255: 'x'"),
    ("--no-restart-exit-codes=0", "not an exit code in 1..255: '0'"),
    ("--no-restart-exit-codes=256", "not an exit code in 1..255: '256'"),
    ("--max-membership-restarts=-2", "max-membership-restarts must be >= -1 (-1: no bound)"),
])
def test_bad_values_are_refused(tmp_path, flag, message):
    proc = subprocess.run([binary("tzrun"), flag, "--no-python", "true"], env=clean_env(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, details(proc)
    assert message in proc.stderr, details(proc)


def test_dry_run_shows_the_restart_rules(tmp_path):
    proc = subprocess.run([binary("tzrun"), "--dry-run", "--max-membership-restarts=-1",
                           "--no-restart-exit-codes=3,2", "--no-python", "true"],
                          env=clean_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, details(proc)
    assert "max_membership_restarts=-1 no_restart_exit_codes=2,3" in proc.stdout, details(proc)

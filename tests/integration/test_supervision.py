"""Supervision behaviour of the real tzrun binary: spawning, exit codes, restarts,
shutdown grace, signal forwarding, nohup, no orphans, exec errors, exit latency, the
agent-hosted store (port busy, real torch gloo all_reduce).

Workers are tests/integration/workers/*.py run with the venv's python (put first in PATH,
so tzrun's default `python3` is the venv's).  Time bounds are deliberately generous: the
test box has 2 shared cores.
"""
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import ROOT, binary, free_port

WORKERS = ROOT / "tests" / "integration" / "workers"
WORKER = str(WORKERS / "worker.py")
VENV_BIN = str(pathlib.Path(sys.executable).parent)


def base_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PET_", "TORCHELASTIC_")) and k not in
           ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
    env["PATH"] = VENV_BIN + os.pathsep + env.get("PATH", "/usr/bin:/bin")
    env.update(extra)
    return env


def tzrun_cmd(*flags, port=None):
    port = port or free_port()
    return [binary("tzrun"), f"--master-port={port}", *flags]


def run(cmd, timeout=120, **kw):
    start = time.monotonic()
    proc = subprocess.run(cmd, env=kw.pop("env", base_env()), capture_output=True, text=True,
                          timeout=timeout, **kw)
    proc.elapsed = time.monotonic() - start
    return proc


def start(cmd, env=None, **kw):
    return subprocess.Popen(cmd, env=env or base_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def wait_for(pred, timeout=30.0, what="condition"):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def alive(pid: int) -> bool:
    """True if pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def starts(out: pathlib.Path):
    p = out / "starts.txt"
    if not p.exists():
        return []
    return [tuple(int(x) for x in line.split()) for line in p.read_text().splitlines()]


def ready(out: pathlib.Path, n: int, attempt: int = 0) -> bool:
    return all((out / f"ready{r}.{attempt}").exists() for r in range(n))


def details(proc) -> str:
    return f"rc={proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"


# --------------------------------------------------------------------------------------
# exit status


def test_success_all_workers_exit_zero(tmp_path):
    proc = run(tzrun_cmd("--nproc-per-node=3", WORKER, str(tmp_path), "--sleep=0"))
    assert proc.returncode == 0, details(proc)
    assert sorted(r for _, r, _ in starts(tmp_path)) == [0, 1, 2]


def test_worker_exit_code_is_propagated_and_others_are_terminated(tmp_path):
    proc = run(tzrun_cmd("--nproc-per-node=3", WORKER, str(tmp_path), "--only-rank=1",
                         "--exit-code=3", "--delay=0.5"))
    assert proc.returncode == 3, details(proc)
    # the surviving workers got SIGTERM (torchrun's close sequence) and recorded it
    for r in (0, 2):
        assert (tmp_path / f"signal{r}.txt").read_text() == str(int(signal.SIGTERM)), details(proc)
    assert not (tmp_path / "signal1.txt").exists()
    # the torchrun-style failure report names the root cause
    assert "Root Cause (first observed failure):" in proc.stderr, details(proc)
    assert "exitcode  : 3" in proc.stderr, details(proc)
    for _, _, pid in starts(tmp_path):
        assert not alive(pid)


def test_worker_killed_by_signal_gives_128_plus_n(tmp_path):
    proc = run(tzrun_cmd("--nproc-per-node=2", WORKER, str(tmp_path), "--only-rank=0",
                         f"--self-signal={int(signal.SIGKILL)}"))
    assert proc.returncode == 128 + signal.SIGKILL, details(proc)
    assert "Signal 9 (SIGKILL)" in proc.stderr, details(proc)


def test_max_restarts_increments_restart_count(tmp_path):
    proc = run(tzrun_cmd("--nproc-per-node=2", "--max-restarts=3", WORKER, str(tmp_path),
                         "--fail-attempts=2"))
    assert proc.returncode == 0, details(proc)
    attempts = sorted((a, r) for a, r, _ in starts(tmp_path))
    assert attempts == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)], details(proc)
    assert "Worker group FAILED. 3/3 attempts left" in proc.stderr, details(proc)


def test_restarts_exhausted_returns_worker_code(tmp_path):
    proc = run(tzrun_cmd("--nproc-per-node=2", "--max-restarts=1", WORKER, str(tmp_path),
                         "--fail-attempts=5"))
    assert proc.returncode == 1, details(proc)
    assert sorted({a for a, _, _ in starts(tmp_path)}) == [0, 1]


def test_sigterm_ignoring_worker_is_killed_after_shutdown_timeout(tmp_path):
    # rank 1 fails after rank 0 is ready; rank 0 ignores SIGTERM -> SIGKILL after 1 s.
    cmd = tzrun_cmd("--nproc-per-node=2", "--shutdown-timeout=1", WORKER, str(tmp_path),
                    "--ignore-term", "--only-rank=1", "--exit-code=4", "--delay=1")
    proc = run(cmd)
    assert proc.returncode == 4, details(proc)
    assert "forcefully exiting via SIGKILL" in proc.stderr, details(proc)
    assert proc.elapsed < 30, proc.elapsed
    pids = {r: pid for _, r, pid in starts(tmp_path)}
    assert not alive(pids[0])
    # Recorded as killed by SIGKILL, and as stopped by tzrun (not as a failure of its own).
    assert re.search(r"tzrun: stopped by tzrun after the failure \(not failures themselves\): "
                     rf"rank 0 \(local_rank: 0, pid: {pids[0]}, exitcode: -9\)\n", proc.stderr), \
        details(proc)


# --------------------------------------------------------------------------------------
# signals sent to tzrun


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGQUIT])
def test_signal_to_tzrun_is_forwarded_and_exit_is_128_plus_n(tmp_path, sig):
    p = start(tzrun_cmd("--nproc-per-node=2", WORKER, str(tmp_path)))
    try:
        wait_for(lambda: ready(tmp_path, 2), what="workers ready")
        p.send_signal(sig)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 128 + sig, f"rc={p.returncode}\n{err}"
    for r in range(2):
        assert (tmp_path / f"signal{r}.txt").read_text() == str(int(sig)), err
    assert f"Received {signal.Signals(sig).name} death signal" in err
    for _, _, pid in starts(tmp_path):
        assert not alive(pid)


USR1_WORKER = """
import os, pathlib, signal, sys, time
out, rank = pathlib.Path(sys.argv[1]), os.environ["LOCAL_RANK"]
got = []
signal.signal(signal.SIGUSR1, lambda s, f: got.append(s))
(out / f"armed{rank}").touch()
end = time.monotonic() + 60
while not got and time.monotonic() < end:
    time.sleep(0.02)
time.sleep(0.5)  # "checkpointing": the job must still be running afterwards
(out / f"usr1_{rank}").write_text("checkpointed" if got else "timeout")
"""


def test_forward_signals_reach_the_workers_and_the_job_goes_on(tmp_path):
    # A preemption notice (SIGUSR1) passed on with --forward-signals: each worker traps it,
    # checkpoints and exits 0 on its own; the job is not stopped (exit 0, not 128 + 10), even
    # though --signals-to-handle names SIGUSR1 too.
    worker = tmp_path / "usr1.py"
    worker.write_text(USR1_WORKER)
    p = start(tzrun_cmd("--nproc-per-node=2", "--signals-to-handle=SIGTERM,SIGUSR1",
                        "--forward-signals=SIGUSR1", str(worker), str(tmp_path)))
    try:
        wait_for(lambda: all((tmp_path / f"armed{r}").exists() for r in range(2)),
                 what="workers armed")
        p.send_signal(signal.SIGUSR1)
        _, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 0, err
    for r in range(2):
        assert (tmp_path / f"usr1_{r}").read_text() == "checkpointed", err
    assert "Received SIGUSR1: passing it on to the workers" in err
    assert "death signal" not in err


def test_second_signal_skips_the_grace_period(tmp_path):
    p = start(tzrun_cmd("--nproc-per-node=1", "--shutdown-timeout=60", WORKER, str(tmp_path),
                        "--ignore-term"))
    try:
        wait_for(lambda: ready(tmp_path, 1), what="worker ready")
        t0 = time.monotonic()
        p.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=30)
        elapsed = time.monotonic() - t0
    finally:
        p.kill()
    assert p.returncode == 128 + signal.SIGTERM, err
    assert elapsed < 20, elapsed  # far below the 60 s grace


def test_nohup_sighup_stays_ignored(tmp_path):
    def ignore_hup():
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    p = start(tzrun_cmd("--nproc-per-node=2", WORKER, str(tmp_path)), preexec_fn=ignore_hup)
    try:
        wait_for(lambda: ready(tmp_path, 2), what="workers ready")
        for r in range(2):  # workers inherit the ignored SIGHUP, like under torchrun
            assert (tmp_path / f"sighup{r}.txt").read_text() == "ignored"
        p.send_signal(signal.SIGHUP)
        time.sleep(1.0)
        assert p.poll() is None, "tzrun died of an ignored SIGHUP"
        assert not (tmp_path / "signal0.txt").exists()
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 128 + signal.SIGTERM, err


def test_sighup_without_nohup_is_forwarded(tmp_path):
    p = start(tzrun_cmd("--nproc-per-node=1", WORKER, str(tmp_path)))
    try:
        wait_for(lambda: ready(tmp_path, 1), what="worker ready")
        assert (tmp_path / "sighup0.txt").read_text() == "default"
        p.send_signal(signal.SIGHUP)
        _, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 128 + signal.SIGHUP, err
    assert (tmp_path / "signal0.txt").read_text() == str(int(signal.SIGHUP))


# --------------------------------------------------------------------------------------
# no orphans


def read_pids(out: pathlib.Path, prefix: str, n: int):
    return [int((out / f"{prefix}{r}.pid").read_text()) for r in range(n)]


def test_grandchildren_are_killed_when_the_group_stops(tmp_path):
    proc = run(tzrun_cmd("--nproc-per-node=2", "--shutdown-timeout=5", WORKER, str(tmp_path),
                         "--grandchild", "--daemon", "--only-rank=1", "--exit-code=5",
                         "--delay=0.5"))
    assert proc.returncode == 5, details(proc)
    victims = read_pids(tmp_path, "grandchild", 2) + read_pids(tmp_path, "daemon", 2)
    wait_for(lambda: not any(alive(p) for p in victims), timeout=10,
             what=f"descendants {victims} to die")


def test_grandchildren_of_successful_workers_do_not_outlive_tzrun(tmp_path):
    proc = run(tzrun_cmd("--nproc-per-node=2", "--shutdown-timeout=5", WORKER, str(tmp_path),
                         "--grandchild", "--daemon", "--sleep=0"))
    assert proc.returncode == 0, details(proc)
    victims = read_pids(tmp_path, "grandchild", 2) + read_pids(tmp_path, "daemon", 2)
    wait_for(lambda: not any(alive(p) for p in victims), timeout=10,
             what=f"descendants {victims} to die")


def test_sigkill_of_tzrun_leaves_no_orphans(tmp_path):
    p = start(tzrun_cmd("--nproc-per-node=2", WORKER, str(tmp_path), "--grandchild"))
    try:
        wait_for(lambda: ready(tmp_path, 2), what="workers ready")
        workers = [pid for _, _, pid in starts(tmp_path)]
        grandchildren = read_pids(tmp_path, "grandchild", 2)
        assert all(alive(x) for x in workers + grandchildren)
        p.kill()  # SIGKILL: no cleanup code of tzrun runs
        p.wait(timeout=10)
        wait_for(lambda: not any(alive(x) for x in workers + grandchildren), timeout=10,
                 what="workers and grandchildren to die after SIGKILL of tzrun")
    finally:
        p.kill()


# --------------------------------------------------------------------------------------
# program errors


def test_missing_script_fails_before_spawning(tmp_path):
    missing = tmp_path / "nope.py"
    proc = run(tzrun_cmd("--nproc-per-node=2", str(missing)))
    assert proc.returncode == 2, details(proc)
    assert str(missing) in proc.stderr and "does not exist" in proc.stderr, details(proc)


def test_executable_non_python_script_is_run_directly(tmp_path):
    script = tmp_path / "job.sh"
    script.write_text('#!/bin/sh\necho "$RANK $WORLD_SIZE $1" > "$(dirname "$0")/out$LOCAL_RANK"\n')
    script.chmod(0o755)
    proc = run(tzrun_cmd("--nproc-per-node=2", str(script), "x${local_rank}"))
    assert proc.returncode == 0, details(proc)
    assert (tmp_path / "out0").read_text() == "0 2 x0\n"
    assert (tmp_path / "out1").read_text() == "1 2 x1\n"


def test_no_python_program_not_found_is_127(tmp_path):
    proc = run(tzrun_cmd("--no-python", "tzrun-no-such-program-xyz"))
    assert proc.returncode == 127, details(proc)
    assert "tzrun-no-such-program-xyz" in proc.stderr


def test_no_python_not_executable_is_126(tmp_path):
    f = tmp_path / "data.bin"
    f.write_text("not a program")
    proc = run(tzrun_cmd("--no-python", str(f)))
    assert proc.returncode == 126, details(proc)
    assert str(f) in proc.stderr and "chmod" in proc.stderr, details(proc)


def test_exec_format_error_is_126(tmp_path):
    f = tmp_path / "garbage"
    f.write_bytes(b"\x00\x01\x02 not an executable format")
    f.chmod(0o755)
    proc = run(tzrun_cmd("--no-python", str(f)))
    assert proc.returncode == 126, details(proc)


def test_dry_run_prints_worker_env_and_spawns_nothing(tmp_path):
    proc = run(tzrun_cmd("--dry-run", "--nproc-per-node=2", WORKER, str(tmp_path),
                         "--tag=${local_rank}"))
    assert proc.returncode == 0, details(proc)
    lines = proc.stdout.splitlines()
    assert f"[local_rank 1] argv: python3 -u {WORKER} {tmp_path} --tag=1" in lines, details(proc)
    assert "  RANK=1" in lines and "  OMP_NUM_THREADS=1" in lines, details(proc)
    assert not (tmp_path / "starts.txt").exists()


# --------------------------------------------------------------------------------------
# latency


def test_exit_is_detected_immediately(tmp_path):
    # Warm-up run (page cache), then measure: workers exit at once.
    run(tzrun_cmd("--nproc-per-node=2", "--no-python", "true"))
    proc = run(tzrun_cmd("--nproc-per-node=2", "--no-python", "true"))
    assert proc.returncode == 0, details(proc)
    assert proc.elapsed < 2.0, f"tzrun took {proc.elapsed:.2f}s for workers that exit at once"
    # A failure is acted upon at once too: rank 0 exits 1, rank 1 would sleep 60 s.
    proc = run(tzrun_cmd("--nproc-per-node=2", "--no-python", "sh", "-c",
                         'if [ "$LOCAL_RANK" = 0 ]; then exit 1; fi; exec sleep 60'))
    assert proc.returncode == 1, details(proc)
    assert proc.elapsed < 3.0, f"tzrun took {proc.elapsed:.2f}s to act on a failure"


# --------------------------------------------------------------------------------------
# output routing (the agent owns the pipes; formatting is the logs component's)


def test_tee_prefixes_console_lines_and_writes_files(tmp_path):
    logs = tmp_path / "logs"
    proc = run(tzrun_cmd("--nproc-per-node=2", "--tee=3", f"--log-dir={logs}", WORKER,
                         str(tmp_path), "--sleep=0", "--print=hello"))
    assert proc.returncode == 0, details(proc)
    assert "[default0]:hello" in proc.stdout.splitlines(), details(proc)
    assert "[default1]:hello" in proc.stderr.splitlines(), details(proc)
    files = sorted(logs.glob("*/attempt_0/*/stdout.log"))
    assert len(files) == 2 and all(f.read_text() == "hello\n" for f in files)


def test_local_ranks_filter_silences_other_ranks(tmp_path):
    proc = run(tzrun_cmd("--nproc-per-node=2", "--local-ranks-filter=1", WORKER,
                         str(tmp_path), "--sleep=0", "--print=hi"))
    assert proc.returncode == 0, details(proc)
    assert proc.stdout.splitlines().count("hi") == 1, details(proc)


# --------------------------------------------------------------------------------------
# the agent-hosted store


def test_port_busy_is_an_infrastructure_error(tmp_path):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("0.0.0.0", 0))
        s.listen()
        port = s.getsockname()[1]
        proc = run(tzrun_cmd("--nproc-per-node=1", WORKER, str(tmp_path), "--sleep=0",
                             port=port))
    assert proc.returncode == 125, details(proc)
    assert str(port) in proc.stderr and "--master-port" in proc.stderr, details(proc)
    assert not (tmp_path / "starts.txt").exists()


@pytest.mark.parametrize("nproc", [1, 2, 4])
def test_torch_gloo_all_reduce(tmp_path, nproc):
    pytest.importorskip("torch")
    proc = run(tzrun_cmd(f"--nproc-per-node={nproc}", str(WORKERS / "allreduce.py"),
                         str(tmp_path)), timeout=300)
    assert proc.returncode == 0, details(proc)
    expected = nproc * (nproc + 1) / 2
    for r in range(nproc):
        value, world = (tmp_path / f"sum{r}.txt").read_text().split()
        assert float(value) == expected and int(world) == nproc


def test_torch_gloo_all_reduce_standalone(tmp_path):
    pytest.importorskip("torch")
    proc = run([binary("tzrun"), "--standalone", "--nproc-per-node=2",
                str(WORKERS / "allreduce.py"), str(tmp_path)], timeout=300)
    assert proc.returncode == 0, details(proc)
    for r in range(2):
        assert (tmp_path / f"sum{r}.txt").read_text().split()[0] == "3.0"


def test_standalone_with_an_unresolvable_host_name_still_runs(tmp_path):
    # A container / UTS namespace whose host name is in no /etc/hosts or DNS: torchrun hands
    # the workers that name as MASTER_ADDR and init_process_group fails; tzrun advertises an
    # address that resolves, with a warning.
    pytest.importorskip("torch")
    if subprocess.run(["unshare", "--uts", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare --uts is not permitted here (needs root or user namespaces)")
    proc = run(["unshare", "--uts", "sh", "-c", 'hostname tzrun-no-such-host && exec "$@"', "sh",
                binary("tzrun"), "--standalone", "--nproc-per-node=2",
                str(WORKERS / "allreduce.py"), str(tmp_path)], timeout=300)
    assert proc.returncode == 0, details(proc)
    assert "'tzrun-no-such-host' does not resolve" in proc.stderr, details(proc)
    for r in range(2):
        value, world = (tmp_path / f"sum{r}.txt").read_text().split()
        assert float(value) == 3.0 and int(world) == 2

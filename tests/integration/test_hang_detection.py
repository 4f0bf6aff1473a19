"""Hang detection (issue 16 item 1): `tzrun --hang-timeout S` gives every worker
TZRUN_PROGRESS_FILE; a rank that reported progress before and then reports nothing for S s is
killed, the group stopped and restarted within --max-restarts, and the report names the rank, its
last step and phase and its threads. Python workers use examples/progress_helper.py; tzrec_train
reports by itself (the last test SIGSTOPs one of its ranks mid-training).
"""
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import binary, free_port
from train_job_helpers import (  # noqa: F401 (fixtures are used by name)
    criteo, details, job_env, job_pids, metrics, small_dlrm, steps_edit)

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"

WORKER = f"""
import os, sys, time, signal
sys.path.insert(0, {str(EXAMPLES)!r})
from progress_helper import report_progress
r = int(os.environ["RANK"]); att = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
mode = sys.argv[1]
if mode == "silent":       # never reports: not watched
    time.sleep(4); sys.exit(0)
for step in range(40):
    report_progress(step, "train", every=0.1)
    if r == 1 and att == 0 and step == 10:
        if mode == "stop":
            os.kill(os.getpid(), signal.SIGSTOP)   # hung: no more reports
        time.sleep(3600)                           # "sleep": hung, but not stopped
    if mode == "sleep" and r == 0 and att == 0 and step == 11:
        time.sleep(3600)   # the peer, one step on, "waiting in a collective" for rank 1
    time.sleep(0.1)
"""


def tzrun(args, timeout=120):
    return subprocess.run([binary("tzrun"), "--master-port", str(free_port()), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=job_env())


@pytest.fixture
def worker(tmp_path):
    p = tmp_path / "w.py"
    p.write_text(WORKER)
    return p


def test_a_stopped_rank_is_killed_and_the_group_restarted(worker):
    t0 = time.monotonic()
    r = tzrun(["--nproc-per-node=2", "--hang-timeout=3", "--max-restarts=1", worker, "stop"])
    assert r.returncode == 0, r.stderr
    assert time.monotonic() - t0 < 40, r.stderr  # ~1 s to step 10, 3 s, a restart of 4 s
    assert ("hang detected: rank 1 (local_rank 1, pid " in r.stderr
            and "made no progress for 3 s (--hang-timeout 3); last report: step 10, phase train"
            in r.stderr), r.stderr
    assert "1/1 attempts left; will restart worker group" in r.stderr, r.stderr


def test_the_report_names_the_hung_rank_its_step_and_threads(worker):
    r = tzrun(["--nproc-per-node=2", "--hang-timeout=2", worker, "stop"])
    assert r.returncode == 128 + signal.SIGKILL, r.stderr
    report = r.stderr[r.stderr.index("Root Cause"):]
    assert "rank      : 1 (local_rank: 1)" in report, report
    assert "hang      : no progress for 2 s (--hang-timeout 2" in report, report
    assert "last report: step 10, phase train" in report, report
    assert "threads: tid " in report and " T" in report, report  # T: stopped
    assert "tzrun: root cause is rank 1" in r.stderr
    if shutil.which("eu-stack"):  # scripts/setup.sh installs elfutils; preferred over gdb
        assert "backtrace (eu-stack -p " in report and "Py_RunMain" in report, report
    elif shutil.which("gdb"):
        assert "backtrace (gdb -batch -p " in report, report


def test_the_peer_waiting_on_the_hung_rank_is_not_named_the_root_cause(tmp_path, worker):
    # Rank 1 sleeps at step 10 (not stopped); rank 0 reports step 11 and then waits too. Both
    # go quiet within the same second; the rank with the lower step is the likely cause.
    summary = tmp_path / "s.json"
    r = tzrun(["--nproc-per-node=2", "--hang-timeout=3", "--max-restarts=1",
               "--summary-json", summary, worker, "sleep"])
    assert r.returncode == 0, r.stderr
    first = r.stderr.index("hang detected: rank ")
    assert r.stderr[first:].startswith("hang detected: rank 1 (local_rank 1"), r.stderr
    assert "killing it too (it went quiet with rank 1, the likely cause)" in r.stderr, r.stderr
    # the restart succeeded, and the console still says why the rank hung
    assert "hang report of rank 1 (local_rank 1, pid " in r.stderr, r.stderr
    assert "last report: step 10, phase train" in r.stderr
    assert "threads: tid " in r.stderr
    s = json.loads(summary.read_text())
    (hung,) = [x for x in s["attempts"][0] if x["global_rank"] == 1]
    assert hung["state"] == "hung" and "no progress for 3 s" in hung["hang"], hung
    assert hung["stopped_by_tzrun"] is False
    assert all(x["hang"] is None for x in s["ranks"])  # the restarted attempt ran clean


def test_a_stopped_rank_is_the_root_cause_with_max_restarts_0(tmp_path, worker):
    r = tzrun(["--nproc-per-node=2", "--hang-timeout=3", worker, "stop"])
    assert r.returncode == 128 + signal.SIGKILL, r.stderr
    assert "tzrun: root cause is rank 1" in r.stderr, r.stderr
    assert "killing it and stopping the group (restarted if --max-restarts allows)" in r.stderr


def test_ranks_that_never_report_are_not_watched(worker):
    r = tzrun(["--nproc-per-node=2", "--hang-timeout=1", worker, "silent"])
    assert r.returncode == 0, r.stderr
    assert "hang detected" not in r.stderr


def test_hang_timeout_refuses_bad_values(worker):
    r = tzrun(["--hang-timeout=-1", worker, "silent"])
    assert r.returncode == 2
    assert "argument --hang-timeout/--hang_timeout: invalid value '-1'" in r.stderr, r.stderr


def test_the_progress_dir_goes_with_a_sigkilled_tzrun(tmp_path, worker):
    p = subprocess.Popen([binary("tzrun"), "--master-port", str(free_port()), "--hang-timeout=30",
                          "--nproc-per-node=1", str(worker), "silent"], env=job_env(),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        tmp = pathlib.Path(os.environ.get("TMPDIR", "/tmp"))
        deadline = time.monotonic() + 10
        while not list(tmp.glob(f"tzrun-progress-{p.pid}-*")):
            assert time.monotonic() < deadline, "no progress directory"
            time.sleep(0.05)
        (d,) = tmp.glob(f"tzrun-progress-{p.pid}-*")
        time.sleep(0.5)
        p.kill()
        p.wait()
        deadline = time.monotonic() + 10
        while d.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not d.exists()
    finally:
        if p.poll() is None:
            p.kill()


@pytest.mark.needs_shared_data
def test_tzrec_train_rank_sigstopped_mid_training_is_restarted_in_about_s_seconds(
        tmp_path, criteo, small_dlrm):
    md = tmp_path / "m"
    hang = 10
    edit = steps_edit(400, save_every=100, log_every=50)
    cmd = [binary("tzrun"), "--standalone", "--nproc-per-node=2", f"--hang-timeout={hang}",
           "--max-restarts=1", "tzrec_train", "--pipeline_config_path", str(small_dlrm),
           "--model_dir", str(md), "--train_input_path", str(criteo / "train.txt"),
           "--eval_input_path", str(criteo / "eval.txt"), "--edit_config_json", json.dumps(edit),
           "--continue_train"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=job_env())
    out, stopped_at, detected_at = [], None, None
    for line in p.stdout:
        out.append(line)
        if stopped_at is None and line.startswith("step 150/"):
            for pid in job_pids(str(md)):
                env = pathlib.Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
                cmdline = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                if b"RANK=1" in env and cmdline[0].endswith(b"tzrec_train"):
                    os.kill(pid, signal.SIGSTOP)
                    stopped_at = time.monotonic()
        if detected_at is None and "hang detected: rank 1" in line:
            detected_at = time.monotonic()
    p.wait(timeout=300)
    text = "".join(out)
    assert p.returncode == 0, text[-5000:]
    assert stopped_at is not None and detected_at is not None, text[-5000:]
    # Restarted after about S seconds (the progress files are read every second; tzrec_train
    # reports at most twice a second), not after the process group's 30-minute timeout.
    assert hang - 1 <= detected_at - stopped_at < hang + 15, (detected_at - stopped_at, text[-3000:])
    assert "phase train" in text
    assert "tzrec_train: restored " in text, text[-3000:]
    m = metrics(md)
    assert m["global_step"] == 400 and m["eval_auc"] > 0.5, m

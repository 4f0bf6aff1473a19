"""File timer (watchdog) and health check: the agent-side services torchrun 2.11 reads from
TORCHELASTIC_ENABLE_FILE_TIMER / TORCHELASTIC_TIMER_FILE / TORCHELASTIC_HEALTH_CHECK_PORT
(torch/distributed/elastic/agent/server/local_elastic_agent.py).

File timer: the same real PyTorch worker (FileTimerClient + expires(after=1), then a 60 s
sleep) under torchrun and under tzrun: both launchers hand the worker TORCHELASTIC_TIMER_FILE
(the given path, or <TMPDIR>/watchdog_timer_<uuid4>), the worker is killed with the signal it
asked for within seconds, and the launcher then ends by that signal (torchrun's FileTimerServer
kills its own agent). A timer released in time kills nothing.

Health check: torchrun's server is a stub (agent/server/health_check_server.py), so tzrun is
checked against HTTP itself (urllib): 200 with the agent state while it runs, 503 "stopping"
while it stops, a bad port value refused.
"""
import json
import os
import pathlib
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from conftest import binary, free_port, torchrun_exe

WORKER = r'''
import json, os, sys, time
from torch.distributed.elastic.timer import FileTimerClient, configure, expires
out = sys.argv[1]
path = os.environ.get("TORCHELASTIC_TIMER_FILE")
with open(out + ".env", "w") as f:
    json.dump({"timer_file": path, "is_fifo": path is not None and os.path.exists(path)}, f)
configure(FileTimerClient(path))
with expires(after=float(sys.argv[2]), scope="train_step"):
    time.sleep(float(sys.argv[3]))
open(out + ".done", "w").close()
'''


def launch(launcher, tmp, env_extra, after, sleep):
    tmp.mkdir(parents=True, exist_ok=True)
    script = tmp / "timer_worker.py"
    script.write_text(WORKER)
    venv_bin = str(pathlib.Path(sys.executable).parent)
    env = {"PATH": f"{venv_bin}:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"),
           "TMPDIR": str(tmp), "TORCHELASTIC_ENABLE_FILE_TIMER": "1", **env_extra}
    start = time.monotonic()
    proc = subprocess.run([launcher, "--nproc-per-node=1", "--standalone", str(script),
                           str(tmp / "w"), str(after), str(sleep)],
                          env=env, capture_output=True, text=True, timeout=120)
    seen = json.loads((tmp / "w.env").read_text())
    return proc, time.monotonic() - start, seen, (tmp / "w.done").exists()


def launchers():
    torchrun = torchrun_exe()
    return [("tzrun", binary("tzrun")),
            pytest.param(("torchrun", torchrun), marks=pytest.mark.needs_torchrun)]


@pytest.mark.parametrize("name_exe", launchers(), ids=["tzrun", "torchrun"])
@pytest.mark.parametrize("explicit_file", [False, True], ids=["tmpdir", "timer_file"])
def test_expired_timer_kills_the_worker_and_the_launcher(name_exe, explicit_file, tmp_path):
    name, exe = name_exe
    if not exe:
        pytest.skip("torchrun not found in the venv: run scripts/setup.sh")
    pipe = tmp_path / "my_timer_pipe"
    extra = {"TORCHELASTIC_TIMER_FILE": str(pipe)} if explicit_file else {}
    proc, elapsed, seen, done = launch(exe, tmp_path, extra, after=1, sleep=60)
    log = f"{name}:\n{proc.stdout}\n{proc.stderr}"
    assert not done, log
    assert elapsed < 30, log
    # torchrun's FileTimerServer reaps the worker, then os.kill(own pid, SIGKILL)
    assert proc.returncode == -signal.SIGKILL, log
    if explicit_file:
        assert seen == {"timer_file": str(pipe), "is_fifo": True}, log
    else:
        assert seen["is_fifo"], log
        assert seen["timer_file"].startswith(str(tmp_path / "watchdog_timer_")), log


@pytest.mark.parametrize("name_exe", launchers(), ids=["tzrun", "torchrun"])
def test_released_timer_kills_nothing(name_exe, tmp_path):
    name, exe = name_exe
    if not exe:
        pytest.skip("torchrun not found in the venv: run scripts/setup.sh")
    proc, _, seen, done = launch(exe, tmp_path, {}, after=30, sleep=0.2)
    log = f"{name}:\n{proc.stdout}\n{proc.stderr}"
    assert proc.returncode == 0 and done, log
    assert seen["is_fifo"], log
    if name == "tzrun":
        assert not pathlib.Path(seen["timer_file"]).exists(), "the pipe outlived tzrun"


HEALTH_WORKER = r'''
import os, signal, sys, time
def on_term(*_):
    open(sys.argv[1] + ".term", "w").close()
    time.sleep(3)   # stopping: the agent waits for us
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
open(sys.argv[1] + ".ready", "w").close()
time.sleep(60)
'''


def get(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def wait_for(path, proc, seconds=30):
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def test_health_check_answers_while_running_and_503_while_stopping(tmp_path):
    script = tmp_path / "health_worker.py"
    script.write_text(HEALTH_WORKER)
    port = free_port()
    env = {**os.environ, "TORCHELASTIC_HEALTH_CHECK_PORT": str(port)}
    proc = subprocess.Popen([binary("tzrun"), "--nproc-per-node=1", "--standalone",
                             "--shutdown-timeout=20", str(script), str(tmp_path / "w")],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(tmp_path / "w.ready", proc)
        status, body = get(port)
        assert status == 200, body
        assert body["status"] == "ok" and body["state"] == "running", body
        assert abs(body["last_progress_time"] - time.time()) < 5, body
        assert body["timeout_s"] == 60 and body["restart_count"] == 0, body
        time.sleep(2.2)  # the loop keeps stamping progress while nothing happens
        status, later = get(port)
        assert status == 200 and later["last_progress_time"] > body["last_progress_time"], later
        proc.send_signal(signal.SIGTERM)
        wait_for(tmp_path / "w.term", proc)
        status, body = get(port)
        assert status == 503 and body["status"] == "stopping", body
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 128 + signal.SIGTERM, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_bad_health_check_port_is_refused(tmp_path):
    env = {**os.environ, "TORCHELASTIC_HEALTH_CHECK_PORT": "http"}
    proc = subprocess.run([binary("tzrun"), "--nproc-per-node=1", "--standalone", "--no-python",
                           "true"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "TORCHELASTIC_HEALTH_CHECK_PORT='http' is not a port number" in proc.stderr

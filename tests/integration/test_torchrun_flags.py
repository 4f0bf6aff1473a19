"""torchrun flags that tzrun once accepted without acting on them (issue 15), against real
processes and, where the behaviour is observable, the real torchrun 2.11 side by side:
--duplicate-stdout-filters / --duplicate-stderr-filters, --run-path, --start-method,
--event-log-handler and --monitor-interval.
"""
import json
import pathlib
import subprocess

import pytest

from conftest import free_port, torchrun_exe
from test_logs_and_reports import TIMEOUT, base_env, run_dirs, script, torchrun, tzrun

FRUIT_WORKER = """\
    #!/bin/sh
    echo "apple $LOCAL_RANK"
    echo "pear $LOCAL_RANK"
    echo "a,b $LOCAL_RANK"
    echo "err apple $LOCAL_RANK" >&2
    echo "err plum $LOCAL_RANK" >&2
"""


def filtered_files(log_dir: pathlib.Path) -> dict:
    (run,) = run_dirs(log_dir)
    attempt = run / "attempt_0"
    return {p.name: sorted(p.read_text().splitlines()) for p in attempt.glob("filtered_*.log")}


def filters_args(tmp_path, launcher_dir: str, extra=()):
    worker = script(tmp_path, "fruit.sh", FRUIT_WORKER)
    return ["--nproc-per-node", "3", "--no-python", "--log-dir", tmp_path / launcher_dir,
            "--duplicate-stdout-filters", "apple,a,,b", "--duplicate-stderr-filters=apple",
            *extra, worker]


def test_duplicate_filters_write_filtered_logs(tmp_path):
    # -t 0:3,1:1: rank 0 tees both streams, rank 1 stdout only, rank 2 nothing.
    r = tzrun(filters_args(tmp_path, "tz", ["-t", "0:3,1:1"]))
    assert r.returncode == 0, r.stderr
    assert filtered_files(tmp_path / "tz") == {
        "filtered_stdout.log": ["[default0]:a,b 0", "[default0]:apple 0",
                                "[default1]:a,b 1", "[default1]:apple 1"],
        "filtered_stderr.log": ["[default0]:err apple 0"],
    }


def test_duplicate_filters_skip_muted_ranks_and_untailed_streams(tmp_path):
    r = tzrun(filters_args(tmp_path, "tz", ["-t", "3", "--local-ranks-filter", "1"]))
    assert r.returncode == 0, r.stderr
    got = filtered_files(tmp_path / "tz")
    assert got["filtered_stdout.log"] == ["[default1]:a,b 1", "[default1]:apple 1"]
    r = tzrun(filters_args(tmp_path, "tz2", ["-r", "3"]))
    assert r.returncode == 0, r.stderr
    assert filtered_files(tmp_path / "tz2") == {"filtered_stdout.log": [],
                                                "filtered_stderr.log": []}
    assert "--duplicate-stdout-filters copies only tee'd output" in r.stderr


def test_empty_filter_matches_every_line(tmp_path):
    worker = script(tmp_path, "fruit.sh", FRUIT_WORKER)
    r = tzrun(["--no-python", "-t", "1", "--log-dir", tmp_path / "tz",
               "--duplicate-stdout-filters=", worker])
    assert r.returncode == 0, r.stderr
    assert filtered_files(tmp_path / "tz")["filtered_stdout.log"] == [
        "[default0]:a,b 0", "[default0]:apple 0", "[default0]:pear 0"]


def test_duplicate_filters_without_log_dir_say_where_the_files_go(tmp_path):
    # -t only (nothing redirected) and no --log-dir: the filtered_*.log files land in a temporary
    # directory, and the launcher says which (found by a new-user trial: nothing said it).
    worker = script(tmp_path, "fruit.sh", FRUIT_WORKER)
    (tmp_path / "tmp").mkdir()
    r = tzrun(["--no-python", "-t", "1", "--duplicate-stdout-filters", "apple", worker],
              env=base_env(TMPDIR=str(tmp_path / "tmp")))
    assert r.returncode == 0, r.stderr
    assert "worker logs are written under " in r.stderr, r.stderr
    run = pathlib.Path(r.stderr.split("worker logs are written under ")[1].split()[0])
    assert run.is_relative_to(tmp_path / "tmp"), r.stderr
    assert (run / "attempt_0" / "filtered_stdout.log").read_text() == "[default0]:apple 0\n"


def test_duplicate_filters_refused_with_log_dir_dev_null(tmp_path):
    worker = script(tmp_path, "fruit.sh", FRUIT_WORKER)
    r = tzrun(["--no-python", "--log-dir", "/dev/null", "--duplicate-stdout-filters", "a", worker])
    assert r.returncode == 2
    assert "--duplicate-stdout-filters" in r.stderr and "--log-dir=/dev/null" in r.stderr


@pytest.mark.needs_torchrun
@pytest.mark.parametrize("tee", ["0:3,1:1", "3", "2"])
def test_duplicate_filters_match_torchrun(tmp_path, tee):
    a = tzrun(filters_args(tmp_path, "tz", ["-t", tee]))
    b = torchrun(filters_args(tmp_path, "tr", ["-t", tee]))
    assert (a.returncode, b.returncode) == (0, 0), (a.stderr, b.stderr)
    assert filtered_files(tmp_path / "tz") == filtered_files(tmp_path / "tr")


@pytest.mark.needs_torchrun
def test_duplicate_filters_dev_null_fails_in_torchrun_too(tmp_path):
    worker = script(tmp_path, "fruit.sh", FRUIT_WORKER)
    b = torchrun(["--no-python", "--log-dir", "/dev/null", "--duplicate-stdout-filters", "a",
                  worker])
    assert b.returncode != 0 and "/dev/null/filtered_stdout.log" in b.stderr


# ---------------------------------------------------------------- --run-path

RUN_PATH_SCRIPT = """\
    import json, os, sys
    keys = ("LOCAL_RANK", "RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_NAME",
            "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE",
            "MASTER_ADDR", "OMP_NUM_THREADS", "MARK")
    line = "SEEN " + json.dumps({"argv": sys.argv, "name": __name__, "file": __file__,
                                "path0": sys.path[0], "env": {k: os.environ.get(k) for k in keys}})
    # one write(2) per line: both ranks share the console pipe, and print() under
    # PYTHONUNBUFFERED writes the text and its newline separately (lines merged mid-line)
    os.write(1, (line + "\\n").encode())
    if os.environ.get("BOOM"):
        raise ValueError("boom " + os.environ["LOCAL_RANK"])
"""


def torchrun_in(cwd, args, env=None) -> subprocess.CompletedProcess:
    exe = torchrun_exe()
    if not exe:
        pytest.skip("real torchrun not available")
    cmd = [exe, "--master-port", str(free_port())] + [str(a) for a in args]
    return subprocess.run(cmd, env=env or base_env(), capture_output=True, text=True,
                          timeout=TIMEOUT, errors="replace", cwd=cwd)


def seen(stdout: str) -> list:
    return sorted((json.loads(l.split("SEEN ", 1)[1]) for l in stdout.splitlines() if "SEEN " in l),
                  key=lambda d: d["env"]["LOCAL_RANK"])


def test_run_path_runs_the_script_with_runpy(tmp_path):
    s = script(tmp_path, "rp.py", RUN_PATH_SCRIPT)
    r = tzrun(["--nproc-per-node", "2", "--run-path", "--no-python", s, "a", "${local_rank}"],
              cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    got = seen(r.stdout)
    assert [g["argv"] for g in got] == [[str(s), "a", "0"], [str(s), "a", "1"]]
    assert {g["name"] for g in got} == {"__main__"}
    assert got[0]["path0"] != str(tmp_path)  # runpy.run_path does not add the script's directory


def test_run_path_uncaught_exception_writes_the_error_file(tmp_path):
    s = script(tmp_path, "rp.py", RUN_PATH_SCRIPT)
    env = base_env(BOOM="1")
    r = tzrun(["--run-path", "--log-dir", tmp_path / "ld", s], env=env)
    assert r.returncode == 1
    (run,) = run_dirs(tmp_path / "ld")
    err = json.loads((run / "attempt_0" / "0" / "error.json").read_text())
    assert err["message"]["message"] == "ValueError: boom 0"
    assert "Traceback" in err["message"]["extraInfo"]["py_callstack"]
    assert "ValueError: boom 0" in r.stderr


@pytest.mark.needs_torchrun
@pytest.mark.parametrize("extra", [[], ["--no-python"], ["-m", "--no-python"],
                                   ["--start-method", "fork"]])
def test_run_path_matches_torchrun(tmp_path, extra):
    s = script(tmp_path, "rp.py", RUN_PATH_SCRIPT)
    # -t 1: whole lines (torchrun's function workers write block-buffered to the same stdout)
    args = ["--nproc-per-node", "2", "-t", "1", "--run-path", *extra, s, "x", "--y=${local_rank}"]
    env = base_env(MARK="m")
    a = tzrun(args, env=env)
    b = torchrun(args, env=env)
    assert (a.returncode, b.returncode) == (0, 0), (a.stderr, b.stderr)
    ga, gb = seen(a.stdout), seen(b.stdout)
    for x in ga + gb:
        x["env"].pop("TORCHELASTIC_RUN_ID")  # none in both, but keep the check explicit
    assert ga == gb


@pytest.mark.needs_torchrun
def test_run_path_relative_script_matches_torchrun(tmp_path):
    script(tmp_path, "rp.py", RUN_PATH_SCRIPT)
    a = tzrun(["--run-path", "rp.py", "q"], cwd=tmp_path)
    b = torchrun_in(tmp_path, ["--run-path", "rp.py", "q"])
    assert (a.returncode, b.returncode) == (0, 0), (a.stderr, b.stderr)
    assert seen(a.stdout) == seen(b.stdout)


@pytest.mark.needs_torchrun
def test_run_path_error_file_matches_torchrun(tmp_path):
    s = script(tmp_path, "rp.py", RUN_PATH_SCRIPT)
    env = base_env(BOOM="1")
    a = tzrun(["--run-path", "--log-dir", tmp_path / "tz", s], env=env)
    b = torchrun(["--run-path", "--log-dir", tmp_path / "tr", s], env=env)
    assert (a.returncode, b.returncode) == (1, 1)
    msgs = []
    for d in ("tz", "tr"):
        (run,) = run_dirs(tmp_path / d)
        msgs.append(json.loads((run / "attempt_0" / "0" / "error.json").read_text())["message"])
    assert msgs[0]["message"] == msgs[1]["message"] == "ValueError: boom 0"
    assert set(msgs[0]["extraInfo"]) == set(msgs[1]["extraInfo"])


# ---------------------------------------------------------------- --start-method

@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_start_method_with_run_path_warns_that_workers_are_spawned(tmp_path, method):
    s = script(tmp_path, "rp.py", RUN_PATH_SCRIPT)
    r = tzrun(["--run-path", "--start-method", method, s])
    assert r.returncode == 0, r.stderr
    assert f"--start-method={method} with --run-path: tzrun starts every worker as a fresh" in r.stderr
    assert seen(r.stdout)[0]["argv"] == [str(s)]


def test_start_method_without_run_path_changes_nothing_as_in_torchrun(tmp_path):
    s = script(tmp_path, "rp.py", RUN_PATH_SCRIPT)
    r = tzrun(["--start-method", "fork", s])
    assert r.returncode == 0, r.stderr
    assert "--start-method" not in r.stderr
    r = tzrun(["--start-method", "bogus", s])
    assert r.returncode == 2 and "invalid choice: 'bogus'" in r.stderr


# ---------------------------------------------------------------- --event-log-handler

FAIL_WORKER = """\
    #!/bin/sh
    if [ "$LOCAL_RANK" = 1 ]; then exit 3; fi
    sleep 30
"""
ERROR_FILE_WORKER = """\
    #!/bin/sh
    if [ "$LOCAL_RANK" = 0 ]; then exit 0; fi
    sleep 0.5
    printf '{"message": {"message": "KeyError: \\u00e9", "extraInfo": {"py_callstack": "tb", "timestamp": "1"}}}' > "$TORCHELASTIC_ERROR_FILE"
    exit 2
"""
KILLED_WORKER = """\
    #!/bin/sh
    if [ "$LOCAL_RANK" = 1 ]; then kill -9 $$; fi
    sleep 30
"""


def events(stderr: str) -> list:
    """The event lines, with the values that differ between runs (pids, durations) masked."""
    import re
    out = []
    for line in stderr.splitlines():
        if not line.startswith('{"name": "torchelastic.'):
            continue
        line = re.sub(r'"worker_id": "\d+"', '"worker_id": "PID"', line)
        line = re.sub(r'"duration_ms": [0-9.e+-]+', '"duration_ms": MS', line)
        line = re.sub(r'worker_pid\\": \[\d+\]', r'worker_pid\\": [PID]', line)
        out.append(line)
    return out


def test_console_events_are_json_lines_on_stderr(tmp_path):
    w = script(tmp_path, "ok.sh", "#!/bin/sh\ntrue\n")
    r = tzrun(["--nproc-per-node", "2", "--no-python", "--event-log-handler", "console", w])
    assert r.returncode == 0, r.stderr
    names = [json.loads(l.replace("MS", "0"))["name"].rsplit(".", 1)[1] for l in events(r.stderr)]
    assert names == ["RENDEZVOUS", "ASSIGN_WORKER_RANKS", "START", "START", "SUCCEEDED",
                     "SUCCEEDED", "SUCCEEDED"]
    for handler in ("null", "dynamic_rendezvous"):
        r = tzrun(["--no-python", "--event-log-handler", handler, w])
        assert r.returncode == 0 and events(r.stderr) == [], r.stderr
    r = tzrun(["--no-python", "--event-log-handler", "console", w], env=base_env(LOGLEVEL="WARNING"))
    assert r.returncode == 0 and events(r.stderr) == [], r.stderr


@pytest.mark.needs_torchrun
@pytest.mark.parametrize("worker,extra", [("ok", []), ("fail", ["--max-restarts", "1"]),
                                          ("error_file", []), ("killed", [])])
def test_console_events_match_torchrun(tmp_path, worker, extra):
    body = {"ok": "#!/bin/sh\ntrue\n", "fail": FAIL_WORKER, "error_file": ERROR_FILE_WORKER,
            "killed": KILLED_WORKER}[worker]
    w = script(tmp_path, "w.sh", body)
    args = ["--nproc-per-node", "2", "--no-python", "--event-log-handler", "console", *extra, w]
    a, b = tzrun(args), torchrun(args)
    assert (a.returncode == 0) == (b.returncode == 0), (a.stderr, b.stderr)  # tzrun exits 3, torchrun 1
    assert events(a.stderr) == events(b.stderr)

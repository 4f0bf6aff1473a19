"""Worker logs, console prefixes, failure reports and --summary-json of the real tzrun.

Expected behaviour is torchrun 2.11's (DefaultLogsSpecs, TailLog, ChildFailedError);
a few cases run the real torchrun from the venv side by side and compare.
Most workers are tiny shell scripts started with --no-python so the file stays fast.
"""
import json
import os
import pathlib
import pty
import re
import select
import subprocess
import sys
import textwrap

import pytest

from conftest import binary, free_port, torchrun_exe

VENV_BIN = str(pathlib.Path(sys.executable).parent)
TIMEOUT = 120


def base_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TORCHELASTIC_", "PET_")) and k not in {
               "NO_COLOR", "RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
               "OMP_NUM_THREADS", "LOGLEVEL"}}
    env["PATH"] = f"{VENV_BIN}:{env.get('PATH', '/usr/bin:/bin')}"
    env.update(extra)
    return env


def tzrun(args, env=None, timeout=TIMEOUT, **kw) -> subprocess.CompletedProcess:
    cmd = [binary("tzrun"), "--master-port", str(free_port())] + [str(a) for a in args]
    return subprocess.run(cmd, env=env or base_env(), capture_output=True, text=True,
                          timeout=timeout, errors="replace", **kw)


def torchrun(args, env=None, timeout=TIMEOUT) -> subprocess.CompletedProcess:
    exe = torchrun_exe()
    if not exe:
        pytest.skip("real torchrun not available")
    cmd = [exe, "--master-port", str(free_port())] + [str(a) for a in args]
    return subprocess.run(cmd, env=env or base_env(), capture_output=True, text=True,
                          timeout=timeout, errors="replace")


def script(tmp: pathlib.Path, name: str, body: str) -> pathlib.Path:
    p = tmp / name
    p.write_text(textwrap.dedent(body).lstrip())
    p.chmod(0o755)
    return p


def lines(text: str) -> list[str]:
    return text.splitlines()


def run_dirs(log_dir: pathlib.Path, run_id: str = "none") -> list[pathlib.Path]:
    return sorted(p for p in log_dir.iterdir() if re.fullmatch(rf"{run_id}_[a-z0-9_]{{8}}", p.name))


ECHO_WORKER = """\
    #!/bin/sh
    echo "o$LOCAL_RANK"
    echo "e$LOCAL_RANK" >&2
"""


# ---------------------------------------------------------------- log directory layout

def test_log_dir_layout_per_attempt(tmp_path):
    worker = script(tmp_path, "w.sh", """\
        #!/bin/sh
        echo "out $LOCAL_RANK attempt $TORCHELASTIC_RESTART_COUNT"
        echo "err $LOCAL_RANK attempt $TORCHELASTIC_RESTART_COUNT" >&2
        C=$TORCHELASTIC_RESTART_COUNT
        echo "$TORCHELASTIC_ERROR_FILE" > "$MARKS/ef-$C-$LOCAL_RANK"
        # Barrier: a failing rank gets the other one SIGTERMed, so wait until both printed.
        touch "$MARKS/done-$C-$LOCAL_RANK"
        i=0
        while [ "$(ls "$MARKS" | grep -c "^done-$C-")" -lt 2 ] && [ $i -lt 400 ]; do
            sleep 0.05; i=$((i+1))
        done
        [ "$C" -ge 2 ] || exit 1
    """)
    marks = tmp_path / "marks"
    marks.mkdir()
    log_dir = tmp_path / "logs" / "nested"  # created if missing, like torchrun
    proc = tzrun(["--nproc-per-node=2", "--max-restarts=2", "--log-dir", log_dir, "-r", "3",
                  "--no-python", worker], env=base_env(MARKS=str(marks)))
    assert proc.returncode == 0, proc.stderr
    [run] = run_dirs(log_dir)
    assert sorted(p.name for p in run.iterdir()) == ["attempt_0", "attempt_1", "attempt_2"]
    for attempt in range(3):
        for lr in range(2):
            d = run / f"attempt_{attempt}" / str(lr)
            assert (d / "stdout.log").read_text() == f"out {lr} attempt {attempt}\n"
            assert (d / "stderr.log").read_text() == f"err {lr} attempt {attempt}\n"
            ef = (marks / f"ef-{attempt}-{lr}").read_text().strip()
            assert ef == str(d / "error.json")
            assert not (d / "error.json").exists()  # only the worker would create it
    # -r 3 and no tee: nothing of the workers on the console.
    assert "out 0" not in proc.stdout and "err 0" not in proc.stderr


def test_default_log_dir_is_a_torchelastic_temp_dir(tmp_path):
    worker = script(tmp_path, "w.sh", """\
        #!/bin/sh
        echo "EF=$TORCHELASTIC_ERROR_FILE"
    """)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    proc = tzrun(["--nproc-per-node=1", "--no-python", worker], env=base_env(TMPDIR=str(tmpdir)))
    assert proc.returncode == 0, proc.stderr
    ef = next(l for l in lines(proc.stdout) if l.startswith("EF=")).removeprefix("EF=")
    assert re.fullmatch(
        re.escape(str(tmpdir)) + r"/torchelastic_[a-z0-9_]{8}/none_[a-z0-9_]{8}/attempt_0/0/error.json",
        ef), ef


def test_log_dir_dev_null_keeps_output_on_console_unprefixed(tmp_path):
    worker = script(tmp_path, "w.sh", """\
        #!/bin/sh
        echo "o$LOCAL_RANK ef=[$TORCHELASTIC_ERROR_FILE]"
    """)
    proc = tzrun(["--nproc-per-node=2", "--log-dir", "/dev/null", "-t", "3", "--no-python",
                  worker])
    assert proc.returncode == 0, proc.stderr
    assert sorted(l for l in lines(proc.stdout) if l.startswith("o")) == ["o0 ef=[]", "o1 ef=[]"]


def test_log_dir_that_is_a_file_is_an_error(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    worker = script(tmp_path, "w.sh", ECHO_WORKER)
    proc = tzrun(["--nproc-per-node=1", "--log-dir", f, "--no-python", worker])
    assert proc.returncode != 0
    assert str(f) in proc.stderr and "not a directory" in proc.stderr
    assert "o0" not in proc.stdout  # nothing was spawned


# ---------------------------------------------------------------- redirects and tee

def expected_console(redirect: dict, tee: dict, nproc: int):
    """(stdout lines, stderr lines, absent lines, files) per torchrun's DefaultLogsSpecs."""
    out, err, absent, files = set(), set(), set(), set()
    for lr in range(nproc):
        r, t = redirect.get(lr, 0) | tee.get(lr, 0), tee.get(lr, 0)
        for bit, tag, fname, sink in ((1, "o", "stdout.log", out), (2, "e", "stderr.log", err)):
            line = f"{tag}{lr}"
            if r & bit:
                files.add((lr, fname))
            if t & bit:
                sink.add(f"[default{lr}]:{line}")
                absent.add(line)
            elif r & bit:
                absent.add(line)
                absent.add(f"[default{lr}]:{line}")
            else:
                sink.add(line)
                absent.add(f"[default{lr}]:{line}")
    return out, err, absent, files


def parse_spec(v: str, nproc: int) -> dict:
    if ":" not in v:
        return {lr: int(v) for lr in range(nproc)}
    return {int(k): int(s) for k, s in (kv.split(":") for kv in v.split(","))}


@pytest.mark.parametrize("flags", [
    ["-r", "0"], ["-r", "1"], ["-r", "2"], ["-r", "3"],
    ["-t", "0"], ["-t", "1"], ["-t", "2"], ["-t", "3"],
    ["-r", "0:1,1:2"], ["-t", "0:3,1:1"], ["-r", "1", "-t", "2"], ["--redirects=3", "--tee=0:1"],
])
def test_redirect_tee_modes(tmp_path, flags):
    nproc = 2
    worker = script(tmp_path, "w.sh", ECHO_WORKER)
    log_dir = tmp_path / "logs"
    proc = tzrun([f"--nproc-per-node={nproc}", "--log-dir", log_dir] + flags +
                 ["--no-python", worker])
    assert proc.returncode == 0, proc.stderr
    redirect, tee = {}, {}
    it = iter(flags)
    for f in it:
        name, _, val = f.partition("=")
        val = val or next(it)
        (redirect if name in ("-r", "--redirects") else tee).update(parse_spec(val, nproc))
    want_out, want_err, absent, files = expected_console(redirect, tee, nproc)
    got_out, got_err = set(lines(proc.stdout)), set(lines(proc.stderr))
    assert want_out <= got_out, (want_out, proc.stdout)
    assert want_err <= got_err, (want_err, proc.stderr)
    assert not (absent & (got_out | got_err)), (absent & (got_out | got_err))
    [run] = run_dirs(log_dir)
    for lr in range(nproc):
        for fname in ("stdout.log", "stderr.log"):
            p = run / "attempt_0" / str(lr) / fname
            assert p.exists() == ((lr, fname) in files), (p, files)
            if p.exists():
                assert p.read_text() == ("o" if fname == "stdout.log" else "e") + f"{lr}\n"


def test_per_rank_maps_address_local_ranks_ten_and_up(tmp_path):
    worker = script(tmp_path, "w.sh", ECHO_WORKER)
    log_dir = tmp_path / "logs"
    proc = tzrun(["--nproc-per-node=12", "--log-dir", log_dir, "-t", "10:1,11:3", "-r", "3:2",
                  "--no-python", worker])
    assert proc.returncode == 0, proc.stderr
    out, err = set(lines(proc.stdout)), set(lines(proc.stderr))
    assert "[default10]:o10" in out and "[default11]:o11" in out
    assert "[default11]:e11" in err and "e10" in err  # rank 10 stderr not tee'd: raw
    assert "o3" in out and "e3" not in err  # rank 3 stderr redirected only
    for lr in range(10):
        if lr != 3:
            assert f"o{lr}" in out and f"e{lr}" in err
    [run] = run_dirs(log_dir)
    a0 = run / "attempt_0"
    assert sorted(int(p.name) for p in a0.iterdir()) == list(range(12))
    have = {(int(p.parent.name), p.name) for p in a0.glob("*/*.log")}
    assert have == {(10, "stdout.log"), (11, "stdout.log"), (11, "stderr.log"), (3, "stderr.log")}


@pytest.mark.needs_torchrun
def test_tee_prefix_parity_with_torchrun(tmp_path):
    worker = script(tmp_path, "w.sh", """\
        #!/bin/sh
        echo "hello $LOCAL_RANK"
        echo "second $LOCAL_RANK"
        echo "warn $LOCAL_RANK" >&2
    """)
    args = ["--nproc-per-node=2", "--role", "trainer", "--log-dir", tmp_path / "l", "-t", "3",
            "--no-python", worker]

    def tee_lines(text):
        return sorted(l for l in lines(text) if l.startswith("[trainer"))

    ours, theirs = tzrun(args), torchrun(args)
    assert ours.returncode == 0 and theirs.returncode == 0, (ours.stderr, theirs.stderr)
    assert tee_lines(ours.stdout) == tee_lines(theirs.stdout) == [
        "[trainer0]:hello 0", "[trainer0]:second 0", "[trainer1]:hello 1", "[trainer1]:second 1"]
    assert tee_lines(ours.stderr) == tee_lines(theirs.stderr) == [
        "[trainer0]:warn 0", "[trainer1]:warn 1"]


def test_prefix_template_env(tmp_path):
    worker = script(tmp_path, "w.sh", ECHO_WORKER)
    env = base_env(TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE="<${role_name}|${rank}|$local_rank|$foo> ")
    proc = tzrun(["--nproc-per-node=2", "-t", "1", "--no-python", worker], env=env)
    assert proc.returncode == 0, proc.stderr
    out = set(lines(proc.stdout))
    assert {"<default|0|0|$foo> o0", "<default|1|1|$foo> o1"} <= out, proc.stdout


def test_partial_last_line_is_terminated(tmp_path):
    worker = script(tmp_path, "w.sh", """\
        #!/bin/sh
        printf 'no newline at end'
    """)
    log_dir = tmp_path / "logs"
    proc = tzrun(["--nproc-per-node=2", "--log-dir", log_dir, "-t", "1", "--no-python", worker])
    assert proc.returncode == 0, proc.stderr
    assert sorted(lines(proc.stdout)) == ["[default0]:no newline at end",
                                          "[default1]:no newline at end"]
    [run] = run_dirs(log_dir)
    assert (run / "attempt_0" / "0" / "stdout.log").read_bytes() == b"no newline at end"


# ---------------------------------------------------------------- --local-ranks-filter

def test_local_ranks_filter_with_tee(tmp_path):
    worker = script(tmp_path, "w.sh", ECHO_WORKER)
    log_dir = tmp_path / "logs"
    proc = tzrun(["--nproc-per-node=3", "--log-dir", log_dir, "-t", "3",
                  "--local-ranks-filter", "0,2", "--no-python", worker])
    assert proc.returncode == 0, proc.stderr
    assert sorted(l for l in lines(proc.stdout) if "]:o" in l) == ["[default0]:o0", "[default2]:o2"]
    assert "[default1]:e1" not in proc.stderr and "e1" not in lines(proc.stderr)
    [run] = run_dirs(log_dir)
    # Filtered ranks are still written to their files (tee implies redirect).
    assert (run / "attempt_0" / "1" / "stdout.log").read_text() == "o1\n"


def test_local_ranks_filter_without_tee_silences_other_ranks(tmp_path):
    worker = script(tmp_path, "w.sh", ECHO_WORKER)
    proc = tzrun(["--nproc-per-node=3", "--local-ranks-filter", "1", "--no-python", worker])
    assert proc.returncode == 0, proc.stderr
    assert [l for l in lines(proc.stdout) if re.fullmatch(r"o\d", l)] == ["o1"]
    assert [l for l in lines(proc.stderr) if re.fullmatch(r"e\d", l)] == ["e1"]


# ---------------------------------------------------------------- console integrity

FAST_PRINTER = """\
import os, sys
lr = int(os.environ["LOCAL_RANK"])
out = sys.stdout
for i in range(1500):
    n = 1000 + (i * 7919 + lr * 104729) % 15000
    out.write(f"{lr}:{i}:{n}:" + chr(ord("a") + lr) * n + "\\n")
out.flush()
"""


def test_tee_lines_never_interleave(tmp_path):
    worker = script(tmp_path, "printer.py", FAST_PRINTER)
    proc = tzrun(["--nproc-per-node=4", "--log-dir", tmp_path / "logs", "-t", "1", worker])
    assert proc.returncode == 0, proc.stderr
    seen = {lr: 0 for lr in range(4)}
    pat = re.compile(r"\[default(\d)\]:(\d):(\d+):(\d+):([a-d]+)")
    for line in lines(proc.stdout):
        m = pat.fullmatch(line)
        assert m, f"mangled line: {line[:120]!r}"
        lr = int(m[1])
        assert int(m[2]) == lr and int(m[4]) == len(m[5]) and set(m[5]) == {chr(ord("a") + lr)}
        seen[lr] += 1
    assert seen == {lr: 1500 for lr in range(4)}


def run_on_pty(cmd, env):
    """Runs cmd with stdout+stderr on a pseudo-terminal; returns (rc, bytes seen)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(cmd, stdout=slave, stderr=slave, stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    chunks = []
    while True:
        r, _, _ = select.select([master], [], [], TIMEOUT)
        if not r:
            proc.kill()
            break
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: every slave fd is closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=TIMEOUT), b"".join(chunks)


@pytest.mark.parametrize("no_color", [None, "1"])
def test_colour_only_on_terminals_without_no_color(tmp_path, no_color):
    worker = script(tmp_path, "w.sh", ECHO_WORKER)
    env = base_env(**({"NO_COLOR": no_color} if no_color else {}))
    cmd = [binary("tzrun"), "--master-port", str(free_port()), "--nproc-per-node=2", "-t", "3",
           "--no-python", str(worker)]
    rc, seen = run_on_pty(cmd, env)
    assert rc == 0, seen
    text = seen.decode(errors="replace")
    assert "[default0]:" in text and "[default1]:" in text
    if no_color:
        assert "\x1b[" not in text, text
    else:
        assert re.search(r"\x1b\[[0-9;]*m\[default0\]:\x1b\[0mo0", text), text


def test_no_colour_when_piped(tmp_path):
    worker = script(tmp_path, "w.sh", ECHO_WORKER)
    proc = tzrun(["--nproc-per-node=2", "-t", "3", "--no-python", worker])
    assert proc.returncode == 0
    assert "[default0]:o0" in lines(proc.stdout)
    assert "\x1b[" not in proc.stdout and "\x1b[" not in proc.stderr


# ---------------------------------------------------------------- failure reports

def report_block(stderr: str) -> str:
    """The ChildFailedError block: from the first '=' border to the closing one."""
    ls = lines(stderr)
    start = next(i for i, l in enumerate(ls) if re.fullmatch(r"=+", l) and i + 1 < len(ls)
                 and ls[i + 1].endswith(" FAILED"))
    end = next(i for i in range(start + 1, len(ls)) if ls[i] == ls[start])
    return "\n".join(ls[start:end + 1])


def test_report_for_exit_code_failure(tmp_path):
    worker = script(tmp_path, "w.sh", """\
        #!/bin/sh
        if [ "$LOCAL_RANK" = 1 ]; then echo "rank 1 fails"; exit 3; fi
        exec sleep 60
    """)
    proc = tzrun(["--nproc-per-node=2", "--no-python", worker])
    assert proc.returncode == 3, proc.stderr
    block = report_block(proc.stderr)
    assert f"\n{worker} FAILED\n" in block or f"\n{worker.name} FAILED\n" in block, block
    failures, root = block.split("Root Cause (first observed failure):")
    assert "  rank      : 1 (local_rank: 1)" in root
    assert re.search(r"  exitcode  : 3 \(pid: \d+\)", root)
    assert "  error_file: <N/A>" in root
    assert "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html" in root
    assert re.search(r"  time      : \d{4}-\d\d-\d\d_\d\d:\d\d:\d\d", root)
    # The other worker was stopped by tzrun: torchrun lists it as an other failure, tzrun
    # names it after the report as stopped by tzrun, so the root cause is the only failure.
    assert "  <NO_OTHER_FAILURES>" in failures and "Signal 15" not in block
    assert re.search(r"\ntzrun: stopped by tzrun after the failure \(not failures themselves\): "
                     r"rank 0 \(local_rank: 0, pid: \d+, exitcode: -15\)\n", proc.stderr)
    assert re.search(r"tzrun: root cause is rank 1 \(local_rank: 1, pid: \d+\), exited with code 3; "
                     r"exit code 3", proc.stderr)


def test_report_for_signal_failure(tmp_path):
    worker = script(tmp_path, "w.sh", """\
        #!/bin/sh
        kill -KILL $$
    """)
    proc = tzrun(["--nproc-per-node=1", "--no-python", worker])
    assert proc.returncode == 137, proc.stderr
    block = report_block(proc.stderr)
    m = re.search(r"  exitcode  : -9 \(pid: (\d+)\)", block)
    assert m, block
    assert f"  traceback : Signal 9 (SIGKILL) received by PID {m[1]}" in block
    assert "  <NO_OTHER_FAILURES>" in block
    border, title = block.splitlines()[:2]
    # torchrun: width = min(60, max(title, longest failure line)).
    trace_line = f"  traceback : Signal 9 (SIGKILL) received by PID {m[1]}"
    assert len(border) == min(60, max(len(title), len(trace_line)))
    assert "killed by signal 9 (SIGKILL); exit code 137" in proc.stderr


RECORD_WORKER = """\
import os
from torch.distributed.elastic.multiprocessing.errors import record

@record
def main():
    if int(os.environ["LOCAL_RANK"]) == 0:
        raise ValueError("boom from the worker")

main()
"""


def normalise_report(block: str) -> str:
    block = re.sub(r"time      : \S+", "time      : T", block)
    block = re.sub(r"host      : \S+", "host      : H", block)
    block = re.sub(r"pid: \d+", "pid: P", block)
    block = re.sub(r"error_file: \S+", "error_file: F", block)
    return block


@pytest.mark.needs_torchrun
def test_report_for_recorded_python_exception_matches_torchrun(tmp_path):
    worker = script(tmp_path, "rec.py", RECORD_WORKER)
    ours = tzrun(["--nproc-per-node=1", "--log-dir", tmp_path / "a", worker])
    theirs = torchrun(["--nproc-per-node=1", "--log-dir", tmp_path / "b", worker])
    assert ours.returncode == 1 and theirs.returncode == 1, (ours.stderr, theirs.stderr)
    ob, tb = report_block(ours.stderr), report_block(theirs.stderr)
    assert "ValueError: boom from the worker" in ob
    assert "  traceback : Traceback (most recent call last):" in ob
    [run] = run_dirs(tmp_path / "a")
    assert f"  error_file: {run / 'attempt_0' / '0' / 'error.json'}" in ob
    assert normalise_report(ob) == normalise_report(tb)


def test_agent_error_file_receives_root_cause(tmp_path):
    worker = script(tmp_path, "w.sh", """\
        #!/bin/sh
        printf '{"message": {"message": "E: custom", "extraInfo": {"py_callstack": "cs", "timestamp": "7"}}}' \
            > "$TORCHELASTIC_ERROR_FILE"
        exit 5
    """)
    dest = tmp_path / "agent_error.json"
    proc = tzrun(["--nproc-per-node=1", "--no-python", worker],
                 env=base_env(TORCHELASTIC_ERROR_FILE=str(dest)))
    assert proc.returncode == 5, proc.stderr
    data = json.loads(dest.read_text())
    assert data["message"]["message"] == "E: custom"
    assert data["message"]["errorCode"] == 5
    assert "  traceback : cs" in report_block(proc.stderr)


# ---------------------------------------------------------------- --summary-json

def test_summary_json_success(tmp_path):
    worker = script(tmp_path, "w.sh", ECHO_WORKER)
    summary = tmp_path / "out" / "summary.json"
    summary.parent.mkdir()
    proc = tzrun(["--nproc-per-node=2", "--rdzv-id", "job7", "--summary-json", summary,
                  "--no-python", worker])
    assert proc.returncode == 0, proc.stderr
    s = json.loads(summary.read_text())
    assert s["schema_version"] == 1 and s["tool"] == "tzrun"
    assert s["run_id"] == "job7"
    assert s["outcome"] == "succeeded" and s["exit_code"] == 0 and s["restarts"] == 0
    assert s["world_size"] == 2
    assert s["root_cause_rank"] is None
    assert s["end_time"] >= s["start_time"] > 1e9
    assert sorted(r["local_rank"] for r in s["ranks"]) == [0, 1]
    assert all(r["state"] == "succeeded" and r["exit_code"] == 0 and r["pid"] > 0
               for r in s["ranks"])
    assert len(s["attempts"]) == 1
    assert [p.name for p in summary.parent.iterdir()] == ["summary.json"]


def test_summary_json_failure_with_restarts(tmp_path):
    worker = script(tmp_path, "w.sh", """\
        #!/bin/sh
        if [ "$LOCAL_RANK" = 1 ]; then kill -KILL $$; fi
        exit 0
    """)
    summary = tmp_path / "summary.json"
    proc = tzrun(["--nproc-per-node=2", "--max-restarts=1", "--summary-json", summary,
                  "--no-python", worker])
    assert proc.returncode == 137, proc.stderr
    s = json.loads(summary.read_text())
    assert s["outcome"] == "failed" and s["exit_code"] == 137
    assert s["restarts"] == 1 and len(s["attempts"]) == 2
    assert s["root_cause_rank"] == 1
    assert s["root_cause"]["signal"] == 9 and s["root_cause"]["signal_name"] == "SIGKILL"
    assert s["root_cause"]["state"] == "signaled"
    for attempt, ranks in enumerate(s["attempts"]):
        assert all(r["restarts"] == attempt for r in ranks)
        by_lr = {r["local_rank"]: r for r in ranks}
        assert by_lr[1]["signal"] == 9 and by_lr[1]["exit_code"] == 137
    assert s["ranks"] == s["attempts"][-1]


# ---------------------------------------------------------------- stderr tail, muted and stopped ranks

NOISY_FAILER = """\
import os, sys, time
lr = int(os.environ["LOCAL_RANK"])
for i in range(40):
    print(f"noise {lr} {i}", file=sys.stderr)
if lr == int(os.environ.get("FAIL_RANK", "1")):
    time.sleep(0.3)
    raise RuntimeError(f"boom on local rank {lr}")
time.sleep(60)
"""


def tail_of(block: str) -> list[str]:
    """The '  stderr    : last N lines:' field of the root-cause block, as lines."""
    root = block.split("Root Cause (first observed failure):")[1]
    ls = lines(root)
    i = next(i for i, l in enumerate(ls) if l.startswith("  stderr    : last "))
    n = int(re.fullmatch(r"  stderr    : last (\d+) lines?:", ls[i])[1])
    return [l.removeprefix("    ") for l in ls[i + 1:i + 1 + n]]


@pytest.mark.parametrize("flags", [["-r", "2"], ["-t", "2"], ["-r", "2", "-t", "1"]],
                         ids=["redirected", "teed", "redirected-stdout-teed"])
def test_report_and_summary_show_stderr_tail_without_error_file(tmp_path, flags):
    worker = script(tmp_path, "noisy.py", NOISY_FAILER)
    summary = tmp_path / "s.json"
    proc = tzrun(["--nproc-per-node=2", "--log-dir", tmp_path / "logs", *flags,
                  "--summary-json", summary, worker])
    assert proc.returncode == 1, proc.stderr
    block = report_block(proc.stderr)
    assert "  error_file: <N/A>" in block
    tail = tail_of(block)
    assert len(tail) == 20, block  # bounded: the last 20 lines
    assert tail[-1] == "RuntimeError: boom on local rank 1", block
    assert tail[0].startswith("noise 1 ") and "Traceback (most recent call last):" in tail
    s = json.loads(summary.read_text())
    assert s["root_cause"]["stderr_tail"] == "\n".join(tail)
    by_lr = {r["local_rank"]: r for r in s["ranks"]}
    assert by_lr[0]["stderr_tail"] is None or by_lr[0]["state"] == "stopped"


def test_stderr_on_console_is_not_captured(tmp_path):
    worker = script(tmp_path, "noisy.py", NOISY_FAILER)
    summary = tmp_path / "s.json"
    proc = tzrun(["--nproc-per-node=2", "--summary-json", summary, worker])
    assert proc.returncode == 1, proc.stderr
    # The traceback went to the console directly (above the report); nothing is repeated.
    assert "RuntimeError: boom on local rank 1" in lines(proc.stderr)
    assert "  stderr    :" not in report_block(proc.stderr)
    assert json.loads(summary.read_text())["root_cause"]["stderr_tail"] is None


@pytest.mark.parametrize("log_dir", [None, "/dev/null"], ids=["temp-log-dir", "no-log-files"])
def test_muted_rank_failure_is_named_with_its_tail(tmp_path, log_dir):
    worker = script(tmp_path, "noisy.py", NOISY_FAILER)
    summary = tmp_path / "s.json"
    args = ["--nproc-per-node=2", "--local-ranks-filter", "0", "--max-restarts=1",
            "--summary-json", summary]
    if log_dir:
        args += ["--log-dir", log_dir]
    proc = tzrun(args + [worker])
    assert proc.returncode == 1, proc.stderr
    assert "noise 1 0" not in lines(proc.stderr)  # still muted on the console
    # The failure that caused the restart is named on the console, with its tail.
    first = proc.stderr.index("will restart worker group")
    m = re.search(r"rank 1 \(local_rank: 1, pid: \d+\) failed \(exitcode: 1\) with its output "
                  r"hidden by --local-ranks-filter; its last stderr lines:\n", proc.stderr[first:])
    assert m, proc.stderr
    after = lines(proc.stderr[first + m.end():])
    assert "  RuntimeError: boom on local rank 1" in after[:20], after[:20]
    # The final failure: the report's root-cause block carries the tail, a note names it.
    block = report_block(proc.stderr)
    assert tail_of(block)[-1] == "RuntimeError: boom on local rank 1"
    assert re.search(r"\ntzrun: rank 1 \(local_rank: 1, pid: \d+\) failed \(exitcode: 1\) with its "
                     r"output hidden by --local-ranks-filter; see its entry in the report above\n",
                     proc.stderr)
    s = json.loads(summary.read_text())
    for ranks in s["attempts"]:
        by_lr = {r["local_rank"]: r for r in ranks}
        assert by_lr[1]["stderr_tail"].endswith("RuntimeError: boom on local rank 1")
        assert by_lr[1]["state"] == "failed" and not by_lr[1]["stopped_by_tzrun"]


def test_ranks_stopped_by_tzrun_are_marked_in_the_summary(tmp_path):
    worker = script(tmp_path, "noisy.py", NOISY_FAILER)
    summary = tmp_path / "s.json"
    proc = tzrun(["--nproc-per-node=3", "--summary-json", summary, worker],
                 env=base_env(FAIL_RANK="2"))
    assert proc.returncode == 1, proc.stderr
    block = report_block(proc.stderr)
    assert "  <NO_OTHER_FAILURES>" in block and "Signal 15" not in block
    m = re.search(r"tzrun: stopped by tzrun after the failure \(not failures themselves\): (.*)\n",
                  proc.stderr)
    assert m and re.fullmatch(r"rank 0 \(local_rank: 0, pid: \d+, exitcode: -15\), "
                              r"rank 1 \(local_rank: 1, pid: \d+, exitcode: -15\)", m[1]), m and m[1]
    s = json.loads(summary.read_text())
    assert s["root_cause_rank"] == 2 and s["root_cause"]["state"] == "failed"
    assert s["root_cause"]["stopped_by_tzrun"] is False
    by_lr = {r["local_rank"]: r for r in s["ranks"]}
    for lr in (0, 1):
        assert by_lr[lr]["state"] == "stopped" and by_lr[lr]["stopped_by_tzrun"] is True
        assert by_lr[lr]["signal_name"] == "SIGTERM"
    assert [r["local_rank"] for r in s["ranks"] if r["state"] == "failed"] == [2]


@pytest.mark.needs_torchrun
def test_stopped_rank_layout_matches_torchrun_otherwise(tmp_path):
    """Besides tzrun's extra lines, the root-cause block is torchrun's."""
    worker = script(tmp_path, "noisy.py", NOISY_FAILER)
    ours = tzrun(["--nproc-per-node=2", worker])
    theirs = torchrun(["--nproc-per-node=2", worker])
    assert ours.returncode == 1 and theirs.returncode == 1, (ours.stderr, theirs.stderr)
    ob, tb = report_block(ours.stderr), report_block(theirs.stderr)
    o_root = normalise_report(ob.split("Root Cause (first observed failure):")[1])
    t_root = normalise_report(tb.split("Root Cause (first observed failure):")[1])
    assert re.sub(r"\[\d+\]:", "[i]:", o_root) == re.sub(r"\[\d+\]:", "[i]:", t_root)
    # torchrun lists the SIGTERMed rank as an other failure; tzrun says it stopped it.
    assert "Signal 15 (SIGTERM)" in tb and "Signal 15 (SIGTERM)" not in ob

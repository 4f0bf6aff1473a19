"""torchrun flags that tzrun once accepted without acting on them (issue 15), against real
processes and, where the behaviour is observable, the real torchrun 2.11 side by side:
--duplicate-stdout-filters / --duplicate-stderr-filters, --run-path, --start-method,
--event-log-handler and --monitor-interval.
"""
import pathlib

import pytest

from test_logs_and_reports import run_dirs, script, torchrun, tzrun

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

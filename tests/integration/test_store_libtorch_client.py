"""libtorch's C++ ``c10d::TCPStore`` (PyTorch 2.11) as a client of ``tzrun store``.

tests/compat/torch_store_client.cpp runs every c10d::TCPStore operation and prints one
"name value" line per result; we assert them, and that PyTorch's own libuv server gives the
same lines.
"""
from __future__ import annotations

import subprocess

import pytest

from store_helpers import TorchStore, TzrunStore, binary

EXPECTED = {
    "get": "v1",
    "get_binary": r"a\x00b",
    "add1": "5",
    "add2": "-2",
    "add_stored": "-2",
    "cas_missing_empty": "new",
    "cas_missing_lie": "exp",
    "cas_missing_lie_stored": "false",
    "cas_match": "new",
    "cas_mismatch": "new",
    "check_present": "true",
    "check_missing": "false",
    "wait_present": "ok",
    "wait_released": "late arrived",
    "num_keys_delta": "1",
    "delete_present": "true",
    "delete_missing": "false",
    "num_keys_after_delete": "0",
    "append": "abcd",
    "multi_get": "two,one,abcd,",
    "queue_len_empty": "0",
    "queue_len": "2",
    "queue_pop_block": "a",
    "queue_pop_nonblock": "b",
    "queue_pop_blocking_wait": "pushed",
    "list_keys": "ap,cas1,cas3,cnt,k,late,m1,m2,",
    "has_extended_api": "true",
    "done": "ok",
}


def run_client(srv) -> dict[str, str]:
    proc = subprocess.run([binary("torch_store_client"), srv.host, str(srv.port)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"torch_store_client failed ({proc.returncode}):\n{proc.stderr}"
    out = {}
    for line in proc.stdout.splitlines():
        name, _, value = line.partition(" ")
        out[name] = value
    return out


def check_and_strip_timings(out: dict[str, str]) -> dict[str, str]:
    kind, ms = out.pop("wait_timeout").split()
    assert kind == "DistStoreError" and 450 <= int(ms) < 10_000, (kind, ms)
    kind, ms = out.pop("queue_pop_empty").split()
    assert kind == "DistQueueEmptyError" and int(ms) < 10_000, (kind, ms)
    return out


def test_libtorch_client_every_operation_against_tzrun():
    srv = TzrunStore()
    try:
        out = run_client(srv)
        assert srv.alive()
    finally:
        rc = srv.stop()
    assert rc == 0, srv.output()
    assert check_and_strip_timings(out) == EXPECTED


def test_libtorch_client_same_results_as_torch_libuv_server():
    ours, theirs = TzrunStore(), TorchStore(use_libuv=True)
    try:
        a = check_and_strip_timings(run_client(ours))
        b = check_and_strip_timings(run_client(theirs))
    finally:
        ours.stop()
        theirs.stop()
    assert a == b


def test_libtorch_client_rerun_sees_state_of_the_first_run():
    """The second run on the same server continues from the first run's keys."""
    srv = TzrunStore()
    try:
        first = check_and_strip_timings(run_client(srv))
        second = check_and_strip_timings(run_client(srv))
    finally:
        srv.stop()
    assert first == EXPECTED
    # Counters continue; cas1 now exists so the empty-expected row returns its value; the
    # missing-key row for cas2 still "lies"; appends accumulate.
    assert second["add1"] == "3" and second["add2"] == "-4"
    assert second["cas_missing_empty"] == "new" and second["cas_missing_lie"] == "exp"
    assert second["append"] == "abcdabcd"
    assert second["list_keys"] == EXPECTED["list_keys"]
    assert second["done"] == "ok"

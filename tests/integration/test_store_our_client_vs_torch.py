"""Our C++ client (tzrun::store::Client) against our server and PyTorch 2.11's two servers.

tests/compat/store_script.cpp runs a fixed script and prints one JSON line; each run gets a
fresh server. The outputs must be identical, except where PyTorch's servers genuinely differ
(each difference is listed below and in docs/store.md):

* libuv (default backend): COMPARE_SET wakes waiters even when it stored nothing (the
  missing-key "lying" row) -- an upstream bug tzrun does not copy.
* legacy (use_libuv=False / USE_LIBUV=0): COMPARE_SET never wakes waiters, even when it
  created the key; queues do not exist (QUEUE_* closes the connection, so --no-queues); GET
  of a missing key closes the connection (our client only GETs after WAIT, so unseen here).
"""
from __future__ import annotations

import json
import subprocess

import pytest

from store_helpers import TorchStore, TzrunStore, binary

# Where the torch servers differ from tzrun: {op: (tzrun's result, torch's result)}.
LIBUV_DIFFERS = {"wait_by_cas_lie": ("TimeoutError", "released")}
LEGACY_DIFFERS = {"wait_by_cas_store": ("released", "TimeoutError")}


def run_script(kind: str, *flags: str) -> dict:
    if kind == "tzrun":
        srv = TzrunStore()
    else:
        srv = TorchStore(use_libuv=(kind == "torch-libuv"))
    try:
        proc = subprocess.run([binary("store_script"), srv.host, str(srv.port), *flags],
                              capture_output=True, text=True, timeout=120)
        assert srv.alive(), f"{kind} server died:\n{srv.output()}"
    finally:
        rc = srv.stop()
    assert proc.returncode == 0, f"store_script vs {kind} failed:\n{proc.stderr}"
    if kind == "tzrun":
        assert rc == 0, srv.output()
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert len(lines) == 1, proc.stdout
    return json.loads(lines[0])


@pytest.fixture(scope="module")
def ours() -> dict:
    return run_script("tzrun")


def test_script_results_against_tzrun(ours):
    expected_subset = {
        "get": "v1", "get_binary": r"a\x00b", "get_big_ok": True,
        "get_missing_timeout": "TimeoutError",
        "add1": 5, "add2": -2, "add_read": -2, "add_stored": "-2", "add_on_set": 42,
        "cas_missing_empty": "new", "cas_missing_lie": "exp", "cas_missing_lie_stored": False,
        "cas_match": "new", "cas_mismatch": "new", "cas_after": "new",
        "check_present": True, "check_missing": False, "check_empty": True,
        "wait_present": "ok", "wait_timeout": "TimeoutError",
        "wait_by_set": "released", "wait_by_add": "released", "wait_by_append": "released",
        "wait_by_multi_set": "released", "wait_by_cas_store": "released",
        "wait_by_cas_lie": "TimeoutError", "w_lie_exists": False,
        "num_keys_delta": 1, "delete_present": True, "delete_missing": False,
        "num_keys_after_delete": 0, "append": "abcd",
        "multi_get": ["", "one", "two", "one"], "multi_get_none": [],
        "multi_get_missing_timeout": "TimeoutError",
        "prefix_raw_get": "uid", "prefix_list_keys": ["0"],
        "queue_len_empty": 0, "queue_len": 3, "queue_pop": "a", "queue_try_pop": "b",
        "queue_pop_empty_value": "", "queue_try_pop_empty": None,
        "queue_pop_timeout": "TimeoutError", "queue_check_nonempty": True,
        "queue_pop_blocking": "pushed", "queue_num_keys_unchanged": 0,
        "still_connected": True,
    }
    assert {k: ours.get(k) for k in expected_subset} == expected_subset
    assert "/default_pg/0//cpu//0" in ours["raw_list_keys"]
    assert ours["list_keys"] == sorted(k[1:] for k in ours["raw_list_keys"] if k.startswith("/"))
    assert ours["num_keys"] == len(ours["raw_list_keys"])


def _diff(a: dict, b: dict) -> dict:
    return {k: (a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}


def test_identical_to_torch_libuv_server(ours):
    theirs = run_script("torch-libuv")
    assert _diff(ours, theirs) == LIBUV_DIFFERS


def test_identical_to_torch_legacy_server():
    ours_nq = run_script("tzrun", "--no-queues")
    theirs = run_script("torch-legacy", "--no-queues")
    assert _diff(ours_nq, theirs) == LEGACY_DIFFERS


def test_barrier_opcode_against_tzrun():
    """BARRIER (opcode 18) is PyTorch 2.12+; 2.11's servers close the connection on it."""
    out = run_script("tzrun", "--barrier")
    assert out["barrier"] == "ok"
    assert out["barrier_counter"] == "2"
    assert out["still_connected"] is True

"""Shared fixtures for integration tests: locate the built binaries and the venv.

Prerequisite markers (tests/integration/CMakeLists.txt makes one ctest entry per file and marker,
so a missing prerequisite shows as a *skipped* ctest entry, never as a pass):
  needs_shared_data  reads the reference data under ../shared/data (TZRUN_SHARED_DIR overrides
                     ../shared); TZRUN_REQUIRE_SHARED_DATA=1 (the ci test preset) turns its skips
                     into failures
  needs_netns        builds hosts out of network namespaces (netns.py; needs root + iproute2)
  needs_torchrun     runs the real torchrun side by side (TZRUN_REQUIRE_TORCHRUN=1 turns its skips
                     into failures)
  needs_python_etcd  runs torchrun's etcd backends, which need the python-etcd package (installed
                     by scripts/setup.sh); TZRUN_REQUIRE_TORCHRUN=1 turns its skips into failures
When every test a pytest run executed was skipped, pytest exits 77, which ctest reports as
skipped (SKIP_RETURN_CODE 77). pytest's exit 5 (nothing collected) stays a failure.
"""
import os
import pathlib
import shutil
import socket
import sys

import pytest

ROOT = pathlib.Path(os.environ.get("TZRUN_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
BIN = pathlib.Path(os.environ.get("TZRUN_BIN_DIR", ROOT / "build" / "bin"))
SHARED = pathlib.Path(os.environ.get("TZRUN_SHARED_DIR") or ROOT.parent / "shared")

#: marker -> (description, environment variable that turns its skips into failures or None)
PREREQUISITES = {
    "needs_shared_data": ("reads the reference data under ../shared/data (TZRUN_SHARED_DIR)",
                          "TZRUN_REQUIRE_SHARED_DATA"),
    "needs_netns": ("creates network namespaces (tests/integration/netns.py)", None),
    "needs_torchrun": ("runs the real torchrun of the venv side by side", "TZRUN_REQUIRE_TORCHRUN"),
    "needs_python_etcd": ("runs torchrun's etcd backends (python-etcd, installed by scripts/setup.sh)",
                          "TZRUN_REQUIRE_TORCHRUN"),
}
SKIP_EXIT = 77  # ctest SKIP_RETURN_CODE of every integration entry
#: A skip whose reason starts with this is a limit of the host (e.g. its memory), not a missing
#: prerequisite: it stays a skip even when the prerequisite is required.
HOST_LIMIT = "host limit: "


def pytest_configure(config):
    for name, (what, _) in PREREQUISITES.items():
        config.addinivalue_line("markers", f"{name}: {what}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A skip of a test whose prerequisite is required (TZRUN_REQUIRE_...=1) is a failure."""
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if HOST_LIMIT in reason:
        return
    for name, (_, require_var) in PREREQUISITES.items():
        if require_var and os.environ.get(require_var) == "1" and item.get_closest_marker(name):
            report.outcome = "failed"
            report.longrepr = f"{require_var}=1 but the test skipped: {reason}"
            return


def pytest_sessionfinish(session, exitstatus):
    """Exit 77 when tests ran but every one of them was skipped (ctest: skipped, not passed)."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    stats = reporter.stats if reporter else {}
    ran = [r for key in ("passed", "failed", "error", "xfailed", "xpassed")
           for r in stats.get(key, []) if getattr(r, "when", "call") in ("setup", "call")]
    if exitstatus == 0 and stats.get("skipped") and not ran:
        session.exitstatus = SKIP_EXIT


def binary(name: str) -> str:
    path = BIN / name
    if not path.exists():
        pytest.fail(f"{path} is missing: build first (cmake --workflow --preset default)")
    return str(path)


@pytest.fixture
def tzrun_bin() -> str:
    return binary("tzrun")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def port() -> int:
    return free_port()


@pytest.fixture
def python_exe() -> str:
    """The venv python (has torch); workers run under it."""
    return sys.executable


def torchrun_exe() -> str:
    exe = pathlib.Path(sys.executable).parent / "torchrun"
    return str(exe) if exe.exists() else shutil.which("torchrun") or ""

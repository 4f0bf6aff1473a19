"""Shared fixtures for integration tests: locate the built binaries and the venv."""
import os
import pathlib
import shutil
import socket
import sys

import pytest

ROOT = pathlib.Path(os.environ.get("TZRUN_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
BIN = pathlib.Path(os.environ.get("TZRUN_BIN_DIR", ROOT / "build" / "bin"))
SHARED = ROOT.parent / "shared"


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

"""Helpers for the store integration tests: start/stop store servers, raw wire client.

Servers under test:
  * ``TzrunStore``  -- ``tzrun store`` as a subprocess (what CI tests).
  * ``TorchStore``  -- a Python ``torch.distributed.TCPStore(is_master=True)`` hosted in a
    subprocess, libuv (default) or legacy backend; the reference we compare against.

Setting ``TZRUN_STORE_TEST_SERVER=torch`` (or ``torch-legacy``) makes the ``store_server``
fixture start the torch server instead of ours, which is how the expectations in these
tests were checked against real PyTorch 2.11.
"""
from __future__ import annotations

import os
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence

import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))
from conftest import BIN, binary, free_port  # noqa: E402

READY_RE = re.compile(r"tzrun store: listening on (\S+):(\d+)")
MAGIC = 0x3C85F7CE


class ServerProcess:
    """A store server subprocess. Output is drained by a thread (kept in ``lines``)."""

    kind = "?"

    def __init__(self, argv: Sequence[str], ready: re.Pattern, env: dict | None = None,
                 ready_timeout: float = 30.0) -> None:
        self.argv = list(argv)
        self.lines: list[str] = []
        self._ready = threading.Event()
        self.host = "127.0.0.1"
        self.port = 0
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, env=env,
                                     start_new_session=True)
        self._reader = threading.Thread(target=self._drain, args=(ready,), daemon=True)
        self._reader.start()
        deadline = time.monotonic() + ready_timeout
        while not self._ready.wait(0.05):
            if time.monotonic() > deadline or (self.proc.poll() is not None
                                                and not self._reader.is_alive()):
                break
        if not self._ready.is_set():
            out = self.output()
            self.kill()
            pytest.fail(f"{self.argv} printed no ready line within {ready_timeout}s; "
                        f"exit={self.proc.poll()} output:\n{out}")

    def _drain(self, ready: re.Pattern) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            m = ready.search(line)
            if m and not self._ready.is_set():
                self.port = int(m.group(2))
                self._ready.set()

    def output(self) -> str:
        return "\n".join(self.lines)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM, wait; kill if it does not exit. Returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                pytest.fail(f"{self.kind} server ignored SIGTERM for {timeout}s:\n{self.output()}")
        self._reader.join(timeout=5)
        return self.proc.returncode


class TzrunStore(ServerProcess):
    kind = "tzrun"

    def __init__(self, *extra: str, host: str = "127.0.0.1", port: int | None = None,
                 log_level: str = "warning") -> None:
        port = free_port() if port is None else port
        argv = [binary("tzrun"), "store", "--host", host, "--port", str(port),
                "--log-level", log_level, *extra]
        super().__init__(argv, READY_RE)
        self.host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host


_TORCH_SERVER = r"""
import datetime, os, sys
import torch.distributed as dist
use_libuv = os.environ["TZ_USE_LIBUV"] == "1"
s = dist.TCPStore("127.0.0.1", int(sys.argv[1]), is_master=True, wait_for_workers=False,
                  use_libuv=use_libuv, timeout=datetime.timedelta(seconds=60))
assert s.libuvBackend == use_libuv, s.libuvBackend
print(f"torch store: listening on 127.0.0.1:{s.port}", flush=True)
sys.stdin.read()   # until the parent closes our stdin or kills us
"""


class TorchStore(ServerProcess):
    """PyTorch's own TCPStore server (libuv by default, legacy with use_libuv=False)."""

    def __init__(self, use_libuv: bool = True, port: int = 0) -> None:
        self.kind = "torch-libuv" if use_libuv else "torch-legacy"
        env = dict(os.environ, TZ_USE_LIBUV="1" if use_libuv else "0",
                   USE_LIBUV="1" if use_libuv else "0")
        super().__init__([sys.executable, "-c", _TORCH_SERVER, str(port)],
                         re.compile(r"torch store: listening on (\S+):(\d+)"), env=env,
                         ready_timeout=60.0)

    def stop(self, timeout: float = 10.0) -> int:
        if self.proc.poll() is None and self.proc.stdin:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._reader.join(timeout=5)
        return self.proc.returncode


def start_server(kind: str | None = None, *extra: str) -> ServerProcess:
    kind = kind or os.environ.get("TZRUN_STORE_TEST_SERVER", "tzrun")
    if kind == "tzrun":
        return TzrunStore(*extra)
    if kind in ("torch", "torch-libuv"):
        return TorchStore(use_libuv=True)
    if kind == "torch-legacy":
        return TorchStore(use_libuv=False)
    raise ValueError(f"TZRUN_STORE_TEST_SERVER={kind!r}: use tzrun, torch or torch-legacy")


@pytest.fixture
def store_server() -> Iterator[ServerProcess]:
    """The server under test (``tzrun store`` unless TZRUN_STORE_TEST_SERVER says otherwise)."""
    srv = start_server()
    try:
        yield srv
    finally:
        rc = srv.stop()
    if srv.kind == "tzrun":
        assert rc == 0, f"tzrun store exited {rc} on SIGTERM:\n{srv.output()}"


# ---------------------------------------------------------------------------------------
# Raw wire client (tests/../reference/tcpstore-protocol.md). Keys are sent verbatim: no "/".

SET, COMPARE_SET, GET, ADD, CHECK, WAIT, GETNUMKEYS, DELETE_KEY, APPEND, MULTI_GET, \
    MULTI_SET, CANCEL_WAIT, PING, QUEUE_PUSH, QUEUE_POP, QUEUE_LEN, LIST_KEYS = range(1, 18)


def _blob(b: bytes | str) -> bytes:
    if isinstance(b, str):
        b = b.encode()
    return struct.pack("<Q", len(b)) + b


class RawClient:
    """Minimal blocking c10d-protocol client over one TCP connection."""

    def __init__(self, host: str, port: int, handshake: bool = True, timeout: float = 10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if handshake:
            self.send(struct.pack("<BI", 0, MAGIC))
            self.send(struct.pack("<BI", PING, 4242))
            assert self.recv_u32() == 4242

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "RawClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError(f"server closed the connection ({len(buf)}/{n} bytes read)")
            buf += chunk
        return bytes(buf)

    def recv_u8(self) -> int:
        return self.recv_exact(1)[0]

    def recv_u32(self) -> int:
        return struct.unpack("<I", self.recv_exact(4))[0]

    def recv_i64(self) -> int:
        return struct.unpack("<q", self.recv_exact(8))[0]

    def recv_blob(self) -> bytes:
        return self.recv_exact(struct.unpack("<Q", self.recv_exact(8))[0])

    def is_closed_by_peer(self, timeout: float = 5.0) -> bool:
        """True if the server closed (EOF/RST) within ``timeout``; data received is an error."""
        r, _, _ = select.select([self.sock], [], [], timeout)
        if not r:
            return False
        try:
            data = self.sock.recv(1)
        except (ConnectionResetError, BrokenPipeError):
            return True
        if data:
            raise AssertionError(f"expected a close, got data {data!r}")
        return True

    # -- operations -------------------------------------------------------------------
    def set(self, key, value) -> None:
        self.send(bytes([SET]) + _blob(key) + _blob(value))

    def get(self, key) -> bytes:
        self.send(bytes([GET]) + _blob(key))
        return self.recv_blob()

    def add(self, key, delta: int) -> int:
        self.send(bytes([ADD]) + _blob(key) + struct.pack("<q", delta))
        return self.recv_i64()

    def check(self, keys) -> bool:
        self.send(bytes([CHECK]) + struct.pack("<Q", len(keys)) + b"".join(_blob(k) for k in keys))
        return self.recv_u8() == 0

    def wait_send(self, keys) -> None:
        self.send(bytes([WAIT]) + struct.pack("<Q", len(keys)) + b"".join(_blob(k) for k in keys))

    def num_keys(self) -> int:
        self.send(bytes([GETNUMKEYS]))
        return self.recv_i64()

    def list_keys(self) -> list[bytes]:
        self.send(bytes([LIST_KEYS]))
        return [self.recv_blob() for _ in range(self.recv_i64())]

    def ping(self, nonce: int = 7) -> int:
        self.send(struct.pack("<BI", PING, nonce))
        return self.recv_u32()


def wait_until(pred, timeout: float = 10.0, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(interval)
    return pred()


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


__all__ = ["BIN", "binary", "free_port", "TzrunStore", "TorchStore", "ServerProcess",
           "start_server", "store_server", "RawClient", "wait_until", "rss_kib", "MAGIC"]

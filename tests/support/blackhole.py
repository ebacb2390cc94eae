"""A store that never answers: a TCP server on 127.0.0.1 that accepts every connection, reads
nothing back and never replies (what the red team pointed ``audit`` at in issue 20).

Fixture ``blackhole`` (function scope): the ``host:port`` to give as ``endpoint_override``; every
connection is closed when the test ends, so nothing outlives it. ``connections()`` counts the
connections accepted (a command that never reached the store did not test anything).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest


class Blackhole:
    """Listens on 127.0.0.1 (an ephemeral port); holds every accepted socket open, silent."""

    def __init__(self) -> None:
        self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(128)
        self.endpoint = f"127.0.0.1:{self._server.getsockname()[1]}"
        self._held: list[socket.socket] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, name="blackhole", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:  # closed by stop()
                return
            with self._lock:
                self._held.append(conn)

    def connections(self) -> int:
        with self._lock:
            return len(self._held)

    def stop(self) -> None:
        try:
            self._server.shutdown(socket.SHUT_RDWR)  # wakes the accept() (close alone does not, on Linux)
        except OSError:
            pass
        self._server.close()
        self._thread.join(timeout=5)
        with self._lock:
            for conn in self._held:
                conn.close()


@pytest.fixture
def blackhole() -> Iterator[Blackhole]:
    hole = Blackhole()
    try:
        yield hole
    finally:
        hole.stop()

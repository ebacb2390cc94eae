"""The HTTP side of :class:`~secure_bloom.kms.openbao.OpenBaoTransitKms`: hvac, requests, urllib3.

Imported only when an OpenBaoTransitKms is made, so the core install needs none of them (they
come with the ``vault`` extra). Holds the watchdog that bounds each call by its deadline (see
:mod:`secure_bloom.kms.openbao`), the requests transport that answers to it, and the one mapping
of hvac/requests exceptions to secure_bloom errors.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import Any

import hvac
import hvac.exceptions as hvac_errors
import requests
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from ..errors import (AuthenticationError, KeyAccessDeniedError, KeyManagementError, KeyNotFoundError,
                      KmsUnavailableError, MalformedKeyMaterialError, SecureBloomError)

__all__ = ["Watchdog", "new_client", "classify", "redirect_status"]

_RETRYABLE_HTTP = (hvac_errors.InternalServerError, hvac_errors.BadGateway, hvac_errors.VaultDown,
                   hvac_errors.VaultNotInitialized, hvac_errors.UnexpectedError)


def _server_errors(error: hvac_errors.VaultError) -> str:
    errors = getattr(error, "errors", None) or []
    text = "; ".join(" ".join(str(e).split()) for e in errors)
    return text[:200]


def new_client(url: str, token: str, timeout: float | tuple[float, float], verify: bool | str) -> Any:
    """An hvac client whose session refuses redirects and answers to :class:`Watchdog`.

    The environment is read once, here, as requests reads it on every request otherwise (a
    third of a call's client-side CPU: every variable scanned twice for proxies): the proxies
    for ``url`` (``HTTPS_PROXY``, ``NO_PROXY``...) and, for ``verify=True``, the CA bundle of
    ``REQUESTS_CA_BUNDLE`` / ``CURL_CA_BUNDLE``. A change of them takes a new client.
    """
    session = requests.Session()
    session.mount("http://", _DeadlineAdapter())
    session.mount("https://", _DeadlineAdapter())
    session.proxies.update(requests.utils.get_environ_proxies(url))
    if verify is True:
        verify = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True
    session.trust_env = False  # what it would read per request is read above (and no .netrc)
    # hvac sends a given session's own verify whenever it is truthy (requests' default: True),
    # whatever verify hvac is given: the session must carry it, or a CA bundle path is ignored
    session.verify = verify
    return hvac.Client(url=url, token=token, timeout=timeout, verify=verify, allow_redirects=False,
                       session=session)


def classify(error: Exception, what: str, name: str) -> SecureBloomError | str | None:
    """What a failed request means: the error to raise, the text of a retryable failure (str),
    or None for an exception that is not hvac's or requests' (the caller re-raises it)."""
    if isinstance(error, (hvac_errors.Forbidden, hvac_errors.Unauthorized)):
        return KeyAccessDeniedError(f"{what}: access denied ({_server_errors(error)})")
    if isinstance(error, hvac_errors.InvalidPath):
        return KeyNotFoundError(f"{what}: transit key {name!r} not found")
    if isinstance(error, hvac_errors.InvalidRequest):
        return _invalid_request(what, name, error)
    if isinstance(error, requests.exceptions.ReadTimeout):
        return KmsUnavailableError(f"{what}: no answer within the read timeout")
    if isinstance(error, (requests.exceptions.ConnectionError, *_RETRYABLE_HTTP)):
        return _describe(error)
    if isinstance(error, requests.exceptions.RequestException):
        return KmsUnavailableError(f"{what}: {type(error).__name__}")
    if isinstance(error, hvac_errors.VaultError):
        return KeyManagementError(f"{what}: {type(error).__name__} ({_server_errors(error)})")
    return None


def redirect_status(result: object) -> int | None:
    """The HTTP status of ``result`` if it is a redirect (hvac returns those as a Response)."""
    if isinstance(result, requests.Response) and 300 <= result.status_code < 400:
        return int(result.status_code)
    return None


class Watchdog:
    """Shuts down the socket of the calling thread's HTTP connection once ``deadline`` passes.

    A blocked connect, TLS handshake or read then ends at once with a connection error, which
    :meth:`secure_bloom.kms.openbao.OpenBaoTransitKms._attempt` turns into the deadline error. Connections register
    themselves (:class:`_WatchedConnection`) when they connect or send a request.
    """

    _current = threading.local()

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.fired = False
        self.connection: HTTPConnection | None = None
        self.sockets: list[socket.socket] = []  # every socket the call used; a response may hold one
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="openbao-deadline", daemon=True)

    @classmethod
    def current(cls) -> Watchdog | None:
        watchdog: Watchdog | None = getattr(cls._current, "watchdog", None)
        return watchdog

    def __enter__(self) -> Watchdog:
        Watchdog._current.watchdog = self
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        Watchdog._current.watchdog = None
        self._done.set()
        self._thread.join()

    def _run(self) -> None:
        if self._done.wait(max(0.0, self.deadline - time.monotonic())):
            return
        self.fired = True
        while True:  # again until the call ends: the connection may still be connecting
            current = getattr(self.connection, "sock", None)
            for sock in [*self.sockets, *([current] if current is not None else [])]:
                try:  # the plain socket method: never touches an SSL object another thread is using
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)
                except OSError:
                    pass
            if self._done.wait(0.05):
                return


class _WatchedConnection(HTTPConnection):
    """An HTTP connection that registers with the calling thread's watchdog before it blocks."""

    def connect(self) -> None:
        _watch(self)
        super().connect()
        _watch(self)

    def request(self, *args: Any, **kwargs: Any) -> None:
        _watch(self)
        super().request(*args, **kwargs)
        _watch(self)  # the response may outlive self.sock (Connection: close): keep its socket


class _WatchedHTTPSConnection(_WatchedConnection, HTTPSConnection):
    """:class:`_WatchedConnection` for HTTPS (the MRO puts HTTPS's connect under the hooks)."""


def _watch(connection: HTTPConnection) -> None:
    watchdog = Watchdog.current()
    if watchdog is not None:
        watchdog.connection = connection
        if connection.sock is not None and connection.sock not in watchdog.sockets:
            watchdog.sockets.append(connection.sock)


class _WatchedPool(HTTPConnectionPool):
    ConnectionCls = _WatchedConnection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


class _DeadlineAdapter(requests.adapters.HTTPAdapter):
    """requests transport whose connections answer to :class:`Watchdog`, and whose connect
    timeout never runs past the calling thread's deadline."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _WatchedPool, "https": _WatchedHTTPSPool}

    def send(self, request: Any, stream: bool = False, timeout: Any = None, *args: Any, **kwargs: Any) -> Any:
        watchdog = Watchdog.current()
        if watchdog is not None and timeout is not None:
            connect, read = timeout if isinstance(timeout, tuple) else (timeout, timeout)
            timeout = (min(connect, max(0.001, watchdog.deadline - time.monotonic())), read)
        return super().send(request, stream, timeout, *args, **kwargs)


def _describe(error: Exception) -> str:
    if isinstance(error, hvac_errors.VaultError):
        return f"{type(error).__name__} ({_server_errors(error)})"
    if isinstance(error, requests.exceptions.ConnectTimeout):
        return "connect timeout"
    return "connection failed"


def _invalid_request(what: str, name: str, error: hvac_errors.InvalidRequest) -> SecureBloomError:
    detail = _server_errors(error)
    if "not found" in detail:
        return KeyNotFoundError(f"{what}: transit key {name!r} not found")
    if "authentication failed" in detail:
        return AuthenticationError(
            f"{what}: the wrapped key does not authenticate under master key {name!r} "
            "(wrong key or tampered key material)")
    return MalformedKeyMaterialError(f"{what}: rejected ({detail})")

"""A KMS client for the transit engine of OpenBao / HashiCorp Vault, with hvac (SPEC_NOTES 9).

* ``wrap_key``: ``POST /v1/<mount>/encrypt/<master key id> {"plaintext": Base64(key)}`` with the
  key's latest version; the returned ``vault:vN:...`` ciphertext is the wrapped key, verbatim.
  Transit silently *creates* a missing key on encrypt when the token may, so wrapping first
  checks that the key exists (skipped when the token may not read key metadata).
* ``unwrap_key``: ``POST /v1/<mount>/decrypt/<id> {"ciphertext": ...}``: any version still allowed.
* The same wire format as the JVM side's ``io.securebloom.VaultTransitKmsClient``.

Failures: HTTP 401/403 -> :class:`KeyAccessDeniedError`; unknown key -> :class:`KeyNotFoundError`
naming it; a ciphertext that fails authentication -> :class:`AuthenticationError`; connection
errors and HTTP 5xx are retried ``retries`` times with exponential backoff (``backoff_s``, doubled,
jittered) and then raise :class:`KmsUnavailableError`; a read timeout raises it at once (the server
accepted and hung; retrying would multiply the wait). An HTTP redirect (3xx) is refused with a
:class:`KeyManagementError` naming the status: the token is sent to ``url`` and nowhere else. The
token never appears in messages, logs or ``repr``.

Time bound: every public call (``wrap_key``, ``unwrap_key``, ...) returns or raises
:class:`KmsUnavailableError` within ``deadline_s`` seconds, retries and backoff included, however
slowly the server sends its bytes. The (connect, read) timeouts of the ``requests`` layer bound
each socket operation only (a server trickling one byte per second never trips them; neither does
urllib3's ``Timeout(total=...)``, which sets one per-operation timeout), so a watchdog thread shuts
the socket in use down at the deadline, which ends a blocked connect, TLS handshake, header or body
read at once.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import random
import re
import socket
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import hvac
import hvac.exceptions as hvac_errors
import requests
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from ..crypto.gcm import check_key
from ..errors import (AuthenticationError, KeyAccessDeniedError, KeyManagementError, KeyNotFoundError,
                      KmsUnavailableError, MalformedKeyMaterialError, SecureBloomError)

__all__ = ["OpenBaoTransitKms"]

_log = logging.getLogger(__name__)
T = TypeVar("T")

#: Transit key names (the JVM client accepts the same); keeps ids from changing the URL path.
_KEY_NAME = re.compile(r"[A-Za-z0-9._-]+\Z")
_RETRYABLE_HTTP = (hvac_errors.InternalServerError, hvac_errors.BadGateway, hvac_errors.VaultDown,
                   hvac_errors.VaultNotInitialized, hvac_errors.UnexpectedError)
_MAX_BACKOFF_S = 2.0


def _server_errors(error: hvac_errors.VaultError) -> str:
    errors = getattr(error, "errors", None) or []
    text = "; ".join(" ".join(str(e).split()) for e in errors)
    return text[:200]


class OpenBaoTransitKms:
    """:class:`~secure_bloom.kms.client.KmsClient` over an OpenBao/Vault transit engine.

    ``token`` defaults to the first of the ``token_env`` environment variables that is set.
    ``timeout`` is (connect, read) seconds per socket operation; ``deadline_s`` bounds each whole
    call, retries and backoff included (see the module docstring). Redirects are refused. Thread-safe:
    each thread gets its own HTTP session.
    """

    def __init__(self, url: str, token: str | None = None, *,
                 token_env: str | Sequence[str] = ("VAULT_TOKEN", "BAO_TOKEN"), mount: str = "transit",
                 timeout: float | tuple[float, float] = (3.0, 10.0), retries: int = 3,
                 backoff_s: float = 0.2, deadline_s: float = 30.0, verify: bool | str = True) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError("url must start with http:// or https://")
        if isinstance(token_env, str):
            token_env = (token_env,)
        if token is None:
            token = next((os.environ[n] for n in token_env if os.environ.get(n)), None)
        if not token:
            raise KeyAccessDeniedError(f"no OpenBao token: pass token= or set {' or '.join(token_env)}")
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        if not deadline_s > 0:
            raise ValueError(f"deadline_s must be > 0, got {deadline_s}")
        self.url = url.rstrip("/")
        self.mount = mount.strip("/")
        self.timeout = timeout
        self.retries = retries
        self.backoff_s = backoff_s
        self.deadline_s = deadline_s
        self._token = token
        self._verify = verify
        self._local = threading.local()

    # --- KmsClient ----------------------------------------------------------------------------

    def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
        """Encrypt ``key_bytes`` with the latest version of transit key ``master_key_identifier``."""
        key = check_key(key_bytes, "key_bytes")
        name = self._key_name(master_key_identifier)
        deadline = time.monotonic() + self.deadline_s  # one bound for both requests
        self._check_exists(name, deadline)
        plaintext = base64.b64encode(key).decode("ascii")
        response = self._call("encrypt", name, lambda t: t.encrypt_data(
            name, plaintext, mount_point=self.mount), deadline)
        ciphertext = _data(response).get("ciphertext")
        if not isinstance(ciphertext, str) or not ciphertext.startswith("vault:v"):
            raise KeyManagementError(f"OpenBao encrypt with key {name!r} returned no ciphertext")
        return ciphertext

    def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
        """Decrypt a ``vault:vN:...`` wrapped key with transit key ``master_key_identifier``."""
        name = self._key_name(master_key_identifier)
        if not isinstance(wrapped_key, str):
            raise MalformedKeyMaterialError(f"wrapped key for master key {name!r} must be str")
        response = self._call("decrypt", name, lambda t: t.decrypt_data(
            name, wrapped_key, mount_point=self.mount))
        plaintext = _data(response).get("plaintext")
        try:
            return base64.b64decode(str(plaintext), validate=True)
        except (binascii.Error, ValueError):
            raise KeyManagementError(f"OpenBao decrypt with key {name!r} returned no Base64 plaintext") from None

    # --- key administration (examples, tests, operations) ----------------------------------------

    def create_key(self, name: str, key_type: str = "aes256-gcm96") -> None:
        """Create transit key ``name`` (no-op if it exists, as transit does)."""
        name = self._key_name(name)
        self._call("create key", name, lambda t: t.create_key(name, key_type=key_type, mount_point=self.mount))

    def rotate_key(self, name: str) -> int:
        """Add a new version to key ``name``; returns the new latest version."""
        name = self._key_name(name)
        self._call("rotate", name, lambda t: t.rotate_key(name, mount_point=self.mount))
        return self.latest_version(name)

    def latest_version(self, name: str) -> int:
        """The version new wraps use."""
        name = self._key_name(name)
        response = self._call("read key", name, lambda t: t.read_key(name, mount_point=self.mount))
        return int(_data(response)["latest_version"])

    def close(self) -> None:
        """Close this thread's HTTP session."""
        client = getattr(self._local, "client", None)
        if client is not None:
            client.adapter.close()
            self._local.client = None

    def __enter__(self) -> OpenBaoTransitKms:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"OpenBaoTransitKms(url={self.url!r}, mount={self.mount!r})"

    # --- internals --------------------------------------------------------------------------------

    @staticmethod
    def _key_name(name: object) -> str:
        if not isinstance(name, str) or not _KEY_NAME.match(name):
            raise KeyNotFoundError(
                f"master key id {str(name)[:64]!r} is not a valid transit key name ([A-Za-z0-9._-]+)")
        return name

    def _transit(self) -> Any:
        client = getattr(self._local, "client", None)
        if client is None:
            session = requests.Session()
            session.mount("http://", _DeadlineAdapter())
            session.mount("https://", _DeadlineAdapter())
            client = hvac.Client(url=self.url, token=self._token, timeout=self.timeout, verify=self._verify,
                                 allow_redirects=False, session=session)
            self._local.client = client
        return client.secrets.transit

    def _check_exists(self, name: str, deadline: float) -> None:
        try:
            self._call("read key", name, lambda t: t.read_key(name, mount_point=self.mount), deadline)
        except KeyAccessDeniedError:
            pass  # a least-privilege token may encrypt without reading key metadata

    def _call(self, operation: str, name: str, request: Callable[[Any], T], deadline: float | None = None) -> T:
        what = f"OpenBao transit {operation} with key {name!r} at {self.url}"
        if deadline is None:
            deadline = time.monotonic() + self.deadline_s
        late = f"{what}: no answer within the {self.deadline_s:g} s deadline"
        for attempt in range(self.retries + 1):
            try:
                return self._attempt(what, request, deadline, late)
            except (hvac_errors.Forbidden, hvac_errors.Unauthorized) as e:
                raise KeyAccessDeniedError(f"{what}: access denied ({_server_errors(e)})") from None
            except hvac_errors.InvalidPath:
                raise KeyNotFoundError(f"{what}: transit key {name!r} not found") from None
            except hvac_errors.InvalidRequest as e:
                raise _invalid_request(what, name, e) from None
            except requests.exceptions.ReadTimeout:
                raise KmsUnavailableError(f"{what}: no answer within the read timeout") from None
            except (requests.exceptions.ConnectionError, *_RETRYABLE_HTTP) as e:
                failure = _describe(e)
            except requests.exceptions.RequestException as e:
                raise KmsUnavailableError(f"{what}: {type(e).__name__}") from None
            except hvac_errors.VaultError as e:
                raise KeyManagementError(f"{what}: {type(e).__name__} ({_server_errors(e)})") from None
            if attempt < self.retries:
                delay = min(_MAX_BACKOFF_S, self.backoff_s * 2 ** attempt) * (0.5 + random.random() / 2)
                if time.monotonic() + delay >= deadline:
                    raise KmsUnavailableError(f"{what} failed ({failure}); no time left for a retry within "
                                              f"the {self.deadline_s:g} s deadline")
                _log.warning("%s failed (%s); retry %d of %d in %.2f s", what, failure, attempt + 1,
                             self.retries, delay)
                time.sleep(delay)
        raise KmsUnavailableError(f"{what} failed after {self.retries + 1} attempts: {failure}")

    def _attempt(self, what: str, request: Callable[[Any], T], deadline: float, late: str) -> T:
        """One request under a watchdog that shuts its socket down at ``deadline``."""
        if time.monotonic() >= deadline:
            raise KmsUnavailableError(late)
        with _Watchdog(deadline) as watchdog:
            try:
                result = request(self._transit())
            except Exception:
                if watchdog.fired:
                    raise KmsUnavailableError(late) from None
                raise
        if watchdog.fired:  # the answer may have been cut short: never trust it
            raise KmsUnavailableError(late)
        if isinstance(result, requests.Response) and 300 <= result.status_code < 400:
            raise KeyManagementError(
                f"{what}: the server answered HTTP {result.status_code} (a redirect); redirects are refused "
                "so the token goes to the configured URL only: point the URL at the active node")
        return result


class _Watchdog:
    """Shuts down the socket of the calling thread's HTTP connection once ``deadline`` passes.

    A blocked connect, TLS handshake or read then ends at once with a connection error, which
    :meth:`OpenBaoTransitKms._attempt` turns into the deadline error. Connections register
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
    def current(cls) -> _Watchdog | None:
        watchdog: _Watchdog | None = getattr(cls._current, "watchdog", None)
        return watchdog

    def __enter__(self) -> _Watchdog:
        _Watchdog._current.watchdog = self
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        _Watchdog._current.watchdog = None
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
    watchdog = _Watchdog.current()
    if watchdog is not None:
        watchdog.connection = connection
        if connection.sock is not None and connection.sock not in watchdog.sockets:
            watchdog.sockets.append(connection.sock)


class _WatchedPool(HTTPConnectionPool):
    ConnectionCls = _WatchedConnection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


class _DeadlineAdapter(requests.adapters.HTTPAdapter):
    """requests transport whose connections answer to :class:`_Watchdog`, and whose connect
    timeout never runs past the calling thread's deadline."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _WatchedPool, "https": _WatchedHTTPSPool}

    def send(self, request: Any, stream: bool = False, timeout: Any = None, *args: Any, **kwargs: Any) -> Any:
        watchdog = _Watchdog.current()
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


def _data(response: Any) -> dict[str, Any]:
    data = response.get("data") if isinstance(response, dict) else None
    if not isinstance(data, dict):
        raise KeyManagementError("OpenBao response has no JSON 'data' object")
    return data

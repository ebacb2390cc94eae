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
import threading
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, TypeVar

from ..crypto.gcm import check_key
from ..errors import (KeyAccessDeniedError, KeyManagementError, KeyNotFoundError, KmsUnavailableError,
                      MalformedKeyMaterialError, MissingDependencyError, SecureBloomError)

__all__ = ["OpenBaoTransitKms"]

_log = logging.getLogger(__name__)
T = TypeVar("T")

#: Transit key names (the JVM client accepts the same); keeps ids from changing the URL path.
_KEY_NAME = re.compile(r"[A-Za-z0-9._-]+\Z")
_MAX_BACKOFF_S = 2.0


def _http() -> ModuleType:
    """The hvac/requests side (:mod:`secure_bloom.kms._openbao_http`), or a clear error naming the
    extra that brings it."""
    try:
        from . import _openbao_http
    except ImportError as e:
        raise MissingDependencyError(
            f"OpenBaoTransitKms needs hvac and requests, which are not installed ({e.name or e}): "
            "pip install 'secure-bloom[vault]'") from None
    return _openbao_http


class OpenBaoTransitKms:
    """:class:`~secure_bloom.kms.client.KmsClient` over an OpenBao/Vault transit engine.

    Every call returns or raises within ``deadline_s``, retries and backoff included (see the
    module docstring); only connection errors and 5xx answers are retried; a 403 is
    :class:`~secure_bloom.errors.KeyAccessDeniedError`. Redirects are refused, so the token only
    goes to ``url``. Thread-safe: each thread gets its own HTTP session. The token never appears
    in its repr, logs or messages.

    Parameters
    ----------
    url : str
        The server (``http://`` or ``https://``).
    token : str, optional
        The token; default: the first of the ``token_env`` environment variables that is set.
    token_env : str or sequence of str, default ("VAULT_TOKEN", "BAO_TOKEN")
        Environment variables to take the token from.
    mount : str, default "transit"
        The transit engine's mount path.
    timeout : float or (float, float), default (3.0, 10.0)
        (connect, read) seconds per socket operation.
    retries : int, default 3
        Retries after a connection error or a 5xx answer.
    backoff_s : float, default 0.2
        The first retry's wait (doubling).
    deadline_s : float, default 30.0
        The bound on each whole call.
    verify : bool or str, default True
        TLS verification, or a CA bundle path. True uses ``REQUESTS_CA_BUNDLE`` or
        ``CURL_CA_BUNDLE`` when set (read when a thread's client is made, as are the proxy
        variables ``HTTP(S)_PROXY`` and ``NO_PROXY``), else requests' default bundle.

    Raises
    ------
    secure_bloom.errors.MissingDependencyError
        hvac / requests are not installed (``pip install 'secure-bloom[vault]'``).
    ValueError
        ``url`` is not http(s), ``retries`` < 0 or ``deadline_s`` <= 0.
    secure_bloom.errors.KeyAccessDeniedError
        No token was given or found in ``token_env``.

    Examples
    --------
    Making the client does not contact the server; ``wrap_key`` / ``unwrap_key`` do (here the
    token comes from the environment, as in production):

    >>> import os
    >>> from secure_bloom.kms import OpenBaoTransitKms
    >>> os.environ["BAO_TOKEN"] = "example-token-not-a-real-one"
    >>> kms = OpenBaoTransitKms("http://127.0.0.1:8200", token_env="BAO_TOKEN", deadline_s=5)
    >>> kms.url, kms.mount, "example-token" in repr(kms)
    ('http://127.0.0.1:8200', 'transit', False)
    >>> del os.environ["BAO_TOKEN"]
    """

    def __init__(self, url: str, token: str | None = None, *,
                 token_env: str | Sequence[str] = ("VAULT_TOKEN", "BAO_TOKEN"), mount: str = "transit",
                 timeout: float | tuple[float, float] = (3.0, 10.0), retries: int = 3,
                 backoff_s: float = 0.2, deadline_s: float = 30.0, verify: bool | str = True) -> None:
        self._http = _http()
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
        """Encrypt ``key_bytes`` with the latest version of transit key ``master_key_identifier``.

        Parameters
        ----------
        key_bytes : bytes
            The key to wrap (16, 24 or 32 bytes).
        master_key_identifier : str
            The transit key's name.

        Returns
        -------
        str
            ``vault:vN:...``, as the key material stores it.

        Raises
        ------
        secure_bloom.errors.KeyAccessDeniedError
            The server refused the token (403).
        secure_bloom.errors.KeyNotFoundError
            No transit key of that name.
        secure_bloom.errors.KmsUnavailableError
            No answer within ``deadline_s`` (retries included), or a 5xx after the retries.
        ValueError
            ``key_bytes`` is not an AES key length.
        """
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
        """Decrypt a ``vault:vN:...`` wrapped key with transit key ``master_key_identifier``.

        Parameters
        ----------
        wrapped_key : str
            What :meth:`wrap_key` returned.
        master_key_identifier : str
            The transit key's name.

        Returns
        -------
        bytes
            The key.

        Raises
        ------
        secure_bloom.errors.KeyAccessDeniedError
            The server refused the token (403).
        secure_bloom.errors.KeyNotFoundError
            No transit key of that name.
        secure_bloom.errors.KmsUnavailableError
            No answer within ``deadline_s`` (retries included), or a 5xx after the retries.
        secure_bloom.errors.MalformedKeyMaterialError
            ``wrapped_key`` is not a str, or the answer is not an AES key.
        """
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
        """Create transit key ``name`` (no-op if it exists, as transit does).

        Parameters
        ----------
        name : str
            The transit key's name.
        key_type : str, default "aes256-gcm96"
            The transit key type.

        Raises
        ------
        secure_bloom.errors.KeyAccessDeniedError
            The server refused the token (403).
        secure_bloom.errors.KeyNotFoundError
            No transit key of that name.
        secure_bloom.errors.KmsUnavailableError
            No answer within ``deadline_s`` (retries included), or a 5xx after the retries.
        """
        name = self._key_name(name)
        self._call("create key", name, lambda t: t.create_key(name, key_type=key_type, mount_point=self.mount))

    def rotate_key(self, name: str) -> int:
        """Add a new version to key ``name`` (old versions still unwrap).

        Parameters
        ----------
        name : str
            The transit key's name.

        Returns
        -------
        int
            The new latest version.

        Raises
        ------
        secure_bloom.errors.KeyAccessDeniedError
            The server refused the token (403).
        secure_bloom.errors.KeyNotFoundError
            No transit key of that name.
        secure_bloom.errors.KmsUnavailableError
            No answer within ``deadline_s`` (retries included), or a 5xx after the retries.
        """
        name = self._key_name(name)
        self._call("rotate", name, lambda t: t.rotate_key(name, mount_point=self.mount))
        return self.latest_version(name)

    def latest_version(self, name: str) -> int:
        """The version new wraps use.

        Parameters
        ----------
        name : str
            The transit key's name.

        Returns
        -------
        int
            The latest version of the key.

        Raises
        ------
        secure_bloom.errors.KeyAccessDeniedError
            The server refused the token (403).
        secure_bloom.errors.KeyNotFoundError
            No transit key of that name.
        secure_bloom.errors.KmsUnavailableError
            No answer within ``deadline_s`` (retries included), or a 5xx after the retries.
        """
        name = self._key_name(name)
        response = self._call("read key", name, lambda t: t.read_key(name, mount_point=self.mount))
        return int(_data(response)["latest_version"])

    def close(self) -> None:
        """Close this thread's HTTP session.

        Raises
        ------
        None
            Nothing of its own.
        """
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
            client = self._http.new_client(self.url, self._token, self.timeout, self._verify)
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
            except Exception as e:
                outcome = self._http.classify(e, what, name)
                if outcome is None:
                    raise
                if isinstance(outcome, SecureBloomError):
                    raise outcome from None
                failure = outcome
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
        with self._http.Watchdog(deadline) as watchdog:
            try:
                result = request(self._transit())
            except Exception:
                if watchdog.fired:
                    raise KmsUnavailableError(late) from None
                raise
        if watchdog.fired:  # the answer may have been cut short: never trust it
            raise KmsUnavailableError(late)
        status = self._http.redirect_status(result)
        if status is not None:
            raise KeyManagementError(
                f"{what}: the server answered HTTP {status} (a redirect); redirects are refused "
                "so the token goes to the configured URL only: point the URL at the active node")
        return result


def _data(response: Any) -> dict[str, Any]:
    data = response.get("data") if isinstance(response, dict) else None
    if not isinstance(data, dict):
        raise KeyManagementError("OpenBao response has no JSON 'data' object")
    return data

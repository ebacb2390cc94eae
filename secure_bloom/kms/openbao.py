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
accepted and hung; retrying would multiply the wait). So a call returns or raises within about
``(retries + 1) * connect timeout + read timeout + backoffs``. The token never appears in messages,
logs or ``repr``.
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
from typing import Any, TypeVar

import hvac
import hvac.exceptions as hvac_errors
import requests

from ..errors import (AuthenticationError, KeyAccessDeniedError, KeyManagementError, KeyNotFoundError,
                      KmsUnavailableError, MalformedKeyMaterialError, SecureBloomError)
from ..modules import check_key

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
    ``timeout`` is (connect, read) seconds. Thread-safe: each thread gets its own HTTP session.
    """

    def __init__(self, url: str, token: str | None = None, *,
                 token_env: str | Sequence[str] = ("VAULT_TOKEN", "BAO_TOKEN"), mount: str = "transit",
                 timeout: float | tuple[float, float] = (3.0, 10.0), retries: int = 3,
                 backoff_s: float = 0.2, verify: bool | str = True) -> None:
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
        self.url = url.rstrip("/")
        self.mount = mount.strip("/")
        self.timeout = timeout
        self.retries = retries
        self.backoff_s = backoff_s
        self._token = token
        self._verify = verify
        self._local = threading.local()

    # --- KmsClient ----------------------------------------------------------------------------

    def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
        """Encrypt ``key_bytes`` with the latest version of transit key ``master_key_identifier``."""
        key = check_key(key_bytes, "key_bytes")
        name = self._key_name(master_key_identifier)
        self._check_exists(name)
        plaintext = base64.b64encode(key).decode("ascii")
        response = self._call("encrypt", name, lambda t: t.encrypt_data(
            name, plaintext, mount_point=self.mount))
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
            client = hvac.Client(url=self.url, token=self._token, timeout=self.timeout, verify=self._verify)
            self._local.client = client
        return client.secrets.transit

    def _check_exists(self, name: str) -> None:
        try:
            self._call("read key", name, lambda t: t.read_key(name, mount_point=self.mount))
        except KeyAccessDeniedError:
            pass  # a least-privilege token may encrypt without reading key metadata

    def _call(self, operation: str, name: str, request: Callable[[Any], T]) -> T:
        what = f"OpenBao transit {operation} with key {name!r} at {self.url}"
        for attempt in range(self.retries + 1):
            try:
                return request(self._transit())
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
                _log.warning("%s failed (%s); retry %d of %d in %.2f s", what, failure, attempt + 1,
                             self.retries, delay)
                time.sleep(delay)
        raise KmsUnavailableError(f"{what} failed after {self.retries + 1} attempts: {failure}")


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

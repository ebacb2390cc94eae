"""A KMS client for AWS KMS, with boto3 (extra ``aws``; the guide: docs/guides/aws-kms.md).

* ``wrap_key``: ``Encrypt(KeyId=<master key id>, Plaintext=key, EncryptionContext=...)``; the
  wrapped key is the Base64 of the returned ``CiphertextBlob``.
* ``unwrap_key``: ``Decrypt(CiphertextBlob, EncryptionContext=..., KeyId=<master key id>)``.
  ``KeyId`` is sent for a key id or key ARN (the KMS then refuses a ciphertext of any other key);
  for an alias it is left out, so that data wrapped before the alias was pointed at a new key
  still unwraps (and :func:`~secure_bloom.kms.rewrap_external_key_material` can move it to the
  new key): the encryption context, which names the alias, still binds the wrapped key to it.
* The master key id is what the key material stores: a key id, key ARN, alias name
  (``alias/...``) or alias ARN, as the caller gave it.
* The encryption context (:func:`encryption_context`) is
  ``{"secure_bloom:master_key_id": <master key id>, "secure_bloom:purpose": "parquet-key-wrap"}``:
  a wrapped key moved to another master key id (another key, or another name of the same key)
  fails authentication (``InvalidCiphertextException``), a KMS ciphertext made for anything else
  is never taken for a Parquet key, and IAM policies can allow these calls only
  (``kms:EncryptionContext:secure_bloom:purpose``). The same context as the JVM's
  ``io.securebloom.AwsKmsClient``, so Spark and Python read each other's files.

Credentials come from boto3's usual chain (environment, shared config and credentials files,
``profile``, container and instance roles, web identity) unless a ``session`` is given.

Failures: ``AccessDeniedException`` and refused credentials -> :class:`KeyAccessDeniedError`;
``NotFoundException`` -> :class:`KeyNotFoundError`; ``DisabledException`` and
``KMSInvalidStateException`` (pending deletion) -> :class:`KeyDisabledError`;
``InvalidCiphertextException`` / ``IncorrectKeyException`` -> :class:`AuthenticationError`;
throttling, KMS internal errors, HTTP 5xx and connection failures are retried ``retries`` times
(exponential backoff, jittered) and then raise :class:`KmsUnavailableError`.

Time bound: every call returns or raises within ``deadline_s`` seconds, retries and backoff
included: each attempt is bounded by the botocore ``connect_timeout`` and ``read_timeout`` (per
socket operation), and an attempt starts only if it can finish before the deadline. botocore's
own retries are off (this client counts the attempts).

No credential appears in a message, log line or ``repr``; the wrapped keys are KMS ciphertexts.
botocore's own DEBUG records of a request carry its parameters (the key being wrapped), its
headers (a session token), its canonical request and the response body (the unwrapped key):
while an AwsKms call runs on a thread, the records botocore and urllib3 log on that thread are
withheld (:class:`_WithheldDuringCalls`); other uses of botocore log as before.
"""

from __future__ import annotations

import base64
import binascii
import logging
import random
import threading
import time
from typing import Any

from ..crypto.gcm import check_key
from ..errors import (AuthenticationError, ConfigurationError, KeyAccessDeniedError, KeyDisabledError,
                      KeyManagementError, KeyNotFoundError, KmsUnavailableError, MalformedKeyMaterialError,
                      MissingDependencyError)

__all__ = ["AwsKms", "encryption_context", "CONTEXT_MASTER_KEY_ID", "CONTEXT_PURPOSE", "PURPOSE"]

_log = logging.getLogger(__name__)

#: Encryption context entries (the same on the JVM side: io.securebloom.AwsKmsClient).
CONTEXT_MASTER_KEY_ID = "secure_bloom:master_key_id"
CONTEXT_PURPOSE = "secure_bloom:purpose"
PURPOSE = "parquet-key-wrap"

_MAX_BACKOFF_S = 2.0
_MAX_KEY_ID_CHARS = 2048  # AWS: KeyId is at most 2048 characters
# Error codes worth another attempt: throttling and the KMS's own transient failures.
_RETRYABLE_CODES = frozenset({
    "ThrottlingException", "Throttling", "ThrottledException", "RequestLimitExceeded",
    "TooManyRequestsException", "RequestThrottled", "RequestThrottledException", "SlowDown",
    "KMSInternalException", "DependencyTimeoutException", "KeyUnavailableException",
    "InternalFailure", "ServiceUnavailable", "ServiceUnavailableException", "InternalServerError",
})
_DENIED_CODES = frozenset({
    "AccessDeniedException", "AccessDenied", "UnrecognizedClientException", "InvalidSignatureException",
    "SignatureDoesNotMatch", "IncompleteSignature", "MissingAuthenticationToken", "InvalidClientTokenId",
    "ExpiredTokenException", "ExpiredToken", "RequestExpired", "KMSAccessDeniedException",
})
_DISABLED_CODES = frozenset({"DisabledException", "KMSInvalidStateException", "KeyUnavailableInRegion"})
_NOT_AUTHENTIC_CODES = frozenset({"InvalidCiphertextException", "IncorrectKeyException"})


def encryption_context(master_key_id: str) -> dict[str, str]:
    """The encryption context of every key wrapped under ``master_key_id``.

    Parameters
    ----------
    master_key_id : str
        The master key id as the key material stores it.

    Returns
    -------
    dict[str, str]
        ``{CONTEXT_MASTER_KEY_ID: master_key_id, CONTEXT_PURPOSE: PURPOSE}``.

    Raises
    ------
    None
        ``master_key_id`` is not checked here; :class:`AwsKms` checks it before a request.
    """
    return {CONTEXT_MASTER_KEY_ID: master_key_id, CONTEXT_PURPOSE: PURPOSE}



_calls = threading.local()
_filter_lock = threading.Lock()
_filter_installed = False
# Every logger that may log a request's parameters, headers, signing steps or response body.
_PAYLOAD_LOGGERS = ("botocore", "botocore.endpoint", "botocore.auth", "botocore.parsers", "botocore.awsrequest",
                    "botocore.httpsession", "botocore.hooks", "botocore.client", "botocore.retryhandler",
                    "botocore.retries.standard", "botocore.retries.adaptive", "botocore.utils",
                    "urllib3", "urllib3.connectionpool", "urllib3.connection", "urllib3.response")


class _WithheldDuringCalls(logging.Filter):
    """Drops botocore's and urllib3's records on a thread while it runs an AwsKms call."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(_calls, "active", False)


def _install_log_filter() -> None:
    global _filter_installed
    with _filter_lock:
        if _filter_installed:
            return
        withheld = _WithheldDuringCalls()
        for name in _PAYLOAD_LOGGERS:
            logging.getLogger(name).addFilter(withheld)
        _filter_installed = True


def _is_alias(master_key_id: str) -> bool:
    return master_key_id.startswith("alias/") or (master_key_id.startswith("arn:") and ":alias/" in master_key_id)


def _botocore() -> tuple[Any, Any, Any]:
    """(boto3, botocore.config, botocore.exceptions), or a clear error naming the extra."""
    try:
        import boto3
        import botocore.config
        import botocore.exceptions
    except ImportError as e:
        raise MissingDependencyError(
            f"AwsKms needs boto3, which is not installed ({e.name or e}): pip install 'secure-bloom[aws]'") from None
    return boto3, botocore.config, botocore.exceptions


class AwsKms:
    """:class:`~secure_bloom.kms.client.KmsClient` over AWS KMS (or an API-compatible server).

    Parameters
    ----------
    region : str, optional
        The AWS region (default: boto3's, from ``AWS_REGION`` / ``AWS_DEFAULT_REGION`` or the
        profile's configuration).
    endpoint_url : str, optional
        Another endpoint (a VPC endpoint, a FIPS endpoint, a test server), ``http(s)://host[:port]``.
    profile : str, optional
        A profile of the shared AWS configuration (ignored with ``session``).
    session : boto3.session.Session, optional
        A session whose credentials to use instead of boto3's default chain.
    connect_timeout, read_timeout : float
        Seconds per socket operation (botocore ``Config``); shortened so that one attempt fits
        in ``deadline_s``.
    retries : int
        Further attempts after a throttled, failed or timed-out one.
    backoff_s : float
        First retry delay, doubled each retry (at most 2 s), jittered.
    deadline_s : float
        Bound on each whole call, retries and backoff included.

    Raises
    ------
    ConfigurationError
        No region can be found, or an argument is out of range.
    MissingDependencyError
        boto3 is not installed (extra ``aws``).

    Thread-safe: one botocore client serves every thread.
    """

    def __init__(self, region: str | None = None, *, endpoint_url: str | None = None, profile: str | None = None,
                 session: Any = None, connect_timeout: float = 3.0, read_timeout: float = 10.0, retries: int = 3,
                 backoff_s: float = 0.2, deadline_s: float = 30.0) -> None:
        boto3, config_module, exceptions = _botocore()
        if endpoint_url is not None and not endpoint_url.startswith(("http://", "https://")):
            raise ConfigurationError("endpoint_url must start with http:// or https://")
        if retries < 0:
            raise ConfigurationError(f"retries must be >= 0, got {retries}")
        if not deadline_s > 0:
            raise ConfigurationError(f"deadline_s must be > 0, got {deadline_s}")
        if not (connect_timeout > 0 and read_timeout > 0):
            raise ConfigurationError("connect_timeout and read_timeout must be > 0")
        self._errors = exceptions
        self.retries = retries
        self.backoff_s = backoff_s
        self.deadline_s = float(deadline_s)
        # one attempt (connect + read) never outlasts the deadline
        self.connect_timeout = min(float(connect_timeout), self.deadline_s / 2)
        self.read_timeout = min(float(read_timeout), self.deadline_s - self.connect_timeout)
        config = config_module.Config(connect_timeout=self.connect_timeout, read_timeout=self.read_timeout,
                                      retries={"total_max_attempts": 1}, user_agent_extra="secure-bloom")
        try:
            if session is None:
                session = boto3.session.Session(profile_name=profile, region_name=region)
            self._client = session.client("kms", region_name=region, endpoint_url=endpoint_url, config=config)
        except exceptions.NoRegionError:
            raise ConfigurationError(
                "AwsKms needs a region: pass region= (CLI: --kms-region) or set AWS_REGION") from None
        except exceptions.ProfileNotFound:
            raise ConfigurationError(f"AWS profile {profile!r} is not configured") from None
        self.region = str(self._client.meta.region_name)
        self.endpoint_url = str(self._client.meta.endpoint_url)
        self._lock = threading.Lock()
        self._requests = 0
        _install_log_filter()

    # --- KmsClient ----------------------------------------------------------------------------

    def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
        """Encrypt ``key_bytes`` under master key ``master_key_identifier``.

        Parameters
        ----------
        key_bytes : bytes
            An AES key (16, 24 or 32 bytes).
        master_key_identifier : str
            A key id, key ARN, alias name or alias ARN.

        Returns
        -------
        str
            The Base64 ``CiphertextBlob``.

        Raises
        ------
        KeyNotFoundError, KeyAccessDeniedError, KeyDisabledError, KmsUnavailableError
            As the module docstring says.
        """
        key = check_key(key_bytes, "key_bytes")
        name = self._key_id(master_key_identifier)
        response = self._call("Encrypt", name, lambda: self._client.encrypt(
            KeyId=name, Plaintext=key, EncryptionContext=encryption_context(name)))
        blob = response.get("CiphertextBlob")
        if not isinstance(blob, (bytes, bytearray)) or not blob:
            raise KeyManagementError(f"AWS KMS Encrypt with key {name!r} returned no CiphertextBlob")
        return base64.b64encode(bytes(blob)).decode("ascii")

    def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
        """Decrypt a wrapped key made by :meth:`wrap_key` under ``master_key_identifier``.

        Parameters
        ----------
        wrapped_key : str
            The Base64 ``CiphertextBlob``.
        master_key_identifier : str
            The master key id the key material names.

        Returns
        -------
        bytes
            The key.

        Raises
        ------
        AuthenticationError
            The ciphertext is not one of this master key id (moved, tampered).
        MalformedKeyMaterialError
            ``wrapped_key`` is not Base64.
        KeyNotFoundError, KeyAccessDeniedError, KeyDisabledError, KmsUnavailableError
            As the module docstring says.
        """
        name = self._key_id(master_key_identifier)
        if not isinstance(wrapped_key, str):
            raise MalformedKeyMaterialError(f"wrapped key for master key {name!r} must be str")
        try:
            blob = base64.b64decode(wrapped_key, validate=True)
        except (binascii.Error, ValueError):
            raise MalformedKeyMaterialError(f"the wrapped key for AWS KMS key {name!r} is not Base64") from None
        if not blob:
            raise MalformedKeyMaterialError(f"the wrapped key for AWS KMS key {name!r} is empty")
        request: dict[str, Any] = {"CiphertextBlob": blob, "EncryptionContext": encryption_context(name)}
        if not _is_alias(name):
            request["KeyId"] = name
        response = self._call("Decrypt", name, lambda: self._client.decrypt(**request))
        plaintext = response.get("Plaintext")
        if not isinstance(plaintext, (bytes, bytearray)):
            raise KeyManagementError(f"AWS KMS Decrypt with key {name!r} returned no Plaintext")
        return bytes(plaintext)

    # --- observability ---------------------------------------------------------------------

    @property
    def requests_sent(self) -> int:
        """Encrypt and Decrypt attempts sent so far (each retry counts)."""
        return self._requests

    def __repr__(self) -> str:
        return f"AwsKms(region={self.region!r}, endpoint_url={self.endpoint_url!r})"

    # --- internals --------------------------------------------------------------------------

    @staticmethod
    def _key_id(name: object) -> str:
        if not isinstance(name, str) or not name or len(name) > _MAX_KEY_ID_CHARS or not name.isprintable() \
                or name != name.strip():
            raise KeyNotFoundError(f"master key id {str(name)[:64]!r} is not an AWS KMS key id, key ARN or alias")
        return name

    def _call(self, operation: str, name: str, request: Any) -> dict[str, Any]:
        what = f"AWS KMS {operation} with key {name!r} at {self.endpoint_url}"
        start = time.monotonic()
        deadline = start + self.deadline_s
        attempt_bound = self.connect_timeout + self.read_timeout
        failure = "no attempt made"
        for attempt in range(self.retries + 1):
            if attempt:
                delay = min(_MAX_BACKOFF_S, self.backoff_s * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)
                if time.monotonic() + delay + attempt_bound > deadline:
                    raise KmsUnavailableError(f"{what} failed ({failure}); no time left for a retry within the "
                                              f"{self.deadline_s:g} s deadline")
                _log.warning("%s failed (%s); retry %d of %d in %.2f s", what, failure, attempt, self.retries, delay)
                time.sleep(delay)
            with self._lock:
                self._requests += 1
            _calls.active = True
            try:
                response: dict[str, Any] = request()
                return response
            except Exception as e:  # noqa: BLE001 - classified below; anything else re-raised
                _calls.active = False
                outcome = self._classify(e, what, name)
                if isinstance(outcome, Exception):
                    raise outcome from None
                failure = outcome
            finally:
                _calls.active = False
        raise KmsUnavailableError(f"{what} failed after {self.retries + 1} attempts: {failure}")

    def _classify(self, error: Exception, what: str, name: str) -> Exception | str:
        """The error to raise for ``error``, or the text of a retryable failure."""
        errors = self._errors
        if isinstance(error, errors.ClientError):
            info = error.response.get("Error", {}) if isinstance(error.response, dict) else {}
            code = str(info.get("Code") or "").rpartition("#")[2]
            status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
            message = " ".join(str(info.get("Message") or "").split())[:200]
            detail = f"{code or 'HTTP ' + str(status)}{': ' + message if message else ''}"
            if code in _DENIED_CODES:
                return KeyAccessDeniedError(f"{what}: access denied ({detail})")
            if code in _DISABLED_CODES:
                return KeyDisabledError(f"{what}: the key is disabled or pending deletion ({detail}); "
                                        "enable it (or cancel its deletion) in AWS KMS")
            if code == "NotFoundException":
                return KeyNotFoundError(f"{what}: the key was not found ({detail})")
            if code in _NOT_AUTHENTIC_CODES:
                return AuthenticationError(
                    f"{what}: the wrapped key does not authenticate under master key {name!r} with its encryption "
                    f"context ({code}: wrong master key id, or tampered key material)")
            if code in _RETRYABLE_CODES or status >= 500 or status == 429:
                return detail
            return KeyManagementError(f"{what}: refused ({detail})")
        if isinstance(error, (errors.NoCredentialsError, errors.PartialCredentialsError)):
            return KeyAccessDeniedError(
                f"{what}: no AWS credentials found (environment, shared config or profile, container or instance "
                "role)")
        if isinstance(error, errors.CredentialRetrievalError):
            return KeyAccessDeniedError(f"{what}: the AWS credentials could not be obtained "
                                        f"({type(error).__name__})")
        if isinstance(error, errors.ReadTimeoutError):
            return f"no answer within the {self.read_timeout:g} s read timeout"
        if isinstance(error, errors.ConnectTimeoutError):
            return f"no connection within the {self.connect_timeout:g} s connect timeout"
        if isinstance(error, (errors.EndpointConnectionError, errors.ConnectionClosedError)):
            return "connection failed"
        if isinstance(error, errors.HTTPClientError):
            return f"HTTP client error ({type(error).__name__})"
        if isinstance(error, errors.ParamValidationError):
            return KeyManagementError(f"{what}: invalid request ({type(error).__name__})")
        if isinstance(error, errors.BotoCoreError):
            return KmsUnavailableError(f"{what}: {type(error).__name__}")
        raise error

"""A real AWS KMS API server on 127.0.0.1: moto's server mode (the ``moto_server`` fixture of
support/s3_server.py, shared with the S3 tests), reached through a :class:`CountingProxy` that
counts KMS requests by ``X-Amz-Target`` (``TrentService.Encrypt`` / ``.Decrypt``).

moto 5 keeps a key's state (``DisableKey``, ``ScheduleKeyDeletion`` change it, ``DescribeKey``
reports it) but still encrypts and decrypts with a disabled key; AWS refuses, with
``DisabledException`` (disabled) and ``KMSInvalidStateException`` (pending deletion), HTTP 400.
:func:`enforce_key_state` adds that check to moto's KMS backend, in this process, where the
server runs: clients (Python and the JVM) see the refusal over HTTP as they would from AWS.
:meth:`AwsKmsService.throttle_next` makes the server answer the next Encrypt/Decrypt requests
with ``ThrottlingException`` (HTTP 400), as AWS does over its request quota.

Fixture ``aws_kms`` (session): :class:`AwsKmsService`. Keys are made per test
(:meth:`AwsKmsService.create_key`), so tests never share key state.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from support.s3_server import CountingProxy

#: Credentials of every client of the test server (moto accepts any): output showing SECRET_KEY
#: or SESSION_TOKEN leaks them.
ACCESS_KEY = "AKIDSBKMSTEST0001"
SECRET_KEY = "kmsSeCrEt+7c1e/Q9zT"
SESSION_TOKEN = "kmsSessionTok3n-5d2b"
REGION = "us-east-1"

_throttle = {"remaining": 0}
_throttle_lock = threading.Lock()


def enforce_key_state() -> None:
    """Make moto's KMS backend refuse Encrypt / Decrypt with a disabled or pending-deletion key
    (and throttle on request), as AWS does. Idempotent."""
    from moto.core.exceptions import JsonRESTError
    from moto.kms import models

    backend_class = models.KmsBackend
    if getattr(backend_class, "_secure_bloom_key_state", False):
        return
    original_encrypt, original_decrypt = backend_class.encrypt, backend_class.decrypt

    def throttle() -> None:
        with _throttle_lock:
            if _throttle["remaining"] > 0:
                _throttle["remaining"] -= 1
                raise JsonRESTError("ThrottlingException", "Rate exceeded")

    def check(backend: Any, key_id: str) -> None:
        key = backend.keys.get(key_id)
        if key is None:
            return
        if key.key_state == "Disabled":
            raise JsonRESTError("DisabledException", f"{key.arn} is disabled.")
        if key.key_state != "Enabled":
            raise JsonRESTError("KMSInvalidStateException", f"{key.arn} is {key.key_state}.")

    def encrypt(self: Any, key_id: str, plaintext: bytes, encryption_context: dict[str, str]) -> Any:
        throttle()
        check(self, self.any_id_to_key_id(key_id))
        return original_encrypt(self, key_id, plaintext, encryption_context)

    def decrypt(self: Any, ciphertext_blob: bytes, encryption_context: dict[str, str],
                key_id: str | None = None) -> Any:
        throttle()
        plaintext, arn = original_decrypt(self, ciphertext_blob, encryption_context, key_id)
        check(self, self.get_key_id(arn))
        return plaintext, arn

    backend_class.encrypt = encrypt
    backend_class.decrypt = decrypt
    backend_class._secure_bloom_key_state = True


class AwsKmsService:
    """The moto server's KMS API, for clients (:attr:`endpoint`, through the counting proxy) and
    for the test's own administration (:meth:`admin`: straight to the server)."""

    def __init__(self, proxy: CountingProxy, server_port: int) -> None:
        self.proxy = proxy
        self.endpoint = f"http://127.0.0.1:{proxy.port}"
        self.server_endpoint = f"http://127.0.0.1:{server_port}"
        self.region = REGION

    def session(self) -> Any:
        import boto3

        return boto3.session.Session(aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
                                     aws_session_token=SESSION_TOKEN, region_name=REGION)

    def admin(self) -> Any:
        """A boto3 KMS client straight to the server (not counted)."""
        return self.session().client("kms", endpoint_url=self.server_endpoint)

    def kms(self, **kwargs: Any) -> Any:
        """An :class:`~secure_bloom.kms.AwsKms` through the counting proxy."""
        from secure_bloom.kms import AwsKms

        kwargs.setdefault("session", self.session())
        return AwsKms(REGION, endpoint_url=self.endpoint, **kwargs)

    def create_key(self, alias: str | None = None) -> tuple[str, str]:
        """A new symmetric key (and ``alias/<alias>`` for it): (key id, key ARN)."""
        meta = self.admin().create_key(Description="secure_bloom test")["KeyMetadata"]
        if alias is not None:
            self.admin().create_alias(AliasName=f"alias/{alias}", TargetKeyId=meta["KeyId"])
        return str(meta["KeyId"]), str(meta["Arn"])

    def unique_alias(self, stem: str) -> str:
        """``stem-<random>`` (aliases are per server, the server is per session)."""
        return f"{stem}-{uuid.uuid4().hex[:8]}"

    def disable(self, key_id: str) -> None:
        self.admin().disable_key(KeyId=key_id)

    def enable(self, key_id: str) -> None:
        self.admin().enable_key(KeyId=key_id)

    def schedule_deletion(self, key_id: str) -> None:
        self.admin().schedule_key_deletion(KeyId=key_id, PendingWindowInDays=7)

    def point_alias(self, alias: str, key_id: str) -> None:
        self.admin().update_alias(AliasName=f"alias/{alias}", TargetKeyId=key_id)

    @staticmethod
    def throttle_next(n: int) -> None:
        """The next ``n`` Encrypt/Decrypt requests get ThrottlingException."""
        with _throttle_lock:
            _throttle["remaining"] = n

    def reset(self) -> None:
        with self.proxy.traffic.lock:
            self.proxy.traffic.targets.clear()

    def counts(self) -> dict[str, int]:
        """KMS requests by operation (``Encrypt``, ``Decrypt``) since the last :meth:`reset`."""
        with self.proxy.traffic.lock:
            return {target.rpartition(".")[2]: n for target, n in self.proxy.traffic.targets.items()}

    def hadoop_credentials(self) -> dict[str, str]:
        """The environment variables the JVM client and the CLI read credentials from."""
        return {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
                "AWS_SESSION_TOKEN": SESSION_TOKEN}


@pytest.fixture(scope="session")
def aws_kms(moto_server: int) -> Iterator[AwsKmsService]:
    """moto's KMS API on 127.0.0.1 (key state enforced as AWS does), behind a counting proxy."""
    enforce_key_state()
    proxy = CountingProxy(("127.0.0.1", moto_server))
    try:
        yield AwsKmsService(proxy, moto_server)
    finally:
        AwsKmsService.throttle_next(0)
        proxy.stop()

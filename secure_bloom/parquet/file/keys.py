"""What a caller brings to open encrypted Parquet files: one small frozen value, :class:`KeyAccess`.

Keys are never given directly to the file layer; they are resolved from each file's
``key_metadata`` (SPEC_NOTES 7) through :class:`secure_bloom.kms.KeyUnwrapper`:

* key tools material, internal or in the ``_KEY_MATERIAL_FOR_<file>.json`` sidecar -> ``kms``;
* a plain key id (``kf``, ``kc1``) -> ``explicit`` (:class:`~secure_bloom.kms.ExplicitKeys`);
* ``aad_prefix`` for files written with a withheld AAD prefix (``supply_aad_prefix``).

One ``KeyAccess`` is meant to be shared by the reader, ``attach``, the CLI and the audit: its
unwrapper caches KEKs across files (``cache_lifetime_s``). ``repr`` shows which sources are set,
never key bytes.

:func:`key_access_from_sources` builds one from the sources the CLI and the pytest plugin accept
(a key list or key-list file, explicit key specs, an OpenBao/Vault URL with its token variable),
falling back to ``SECURE_BLOOM_KEY_LIST`` and ``SECURE_BLOOM_KEY_LIST_FILE``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ...errors import ConfigurationError
from ...kms import (AwsKms, ExplicitKeys, FileKeyUnwrapper, KeyListKms, KeyMaterialStore, KeyUnwrapper,
                    OpenBaoTransitKms)
from ...kms.client import is_kms_client
from ...kms.pyarrow_adapter import instance_factory

__all__ = ["KeyAccess", "NO_KEYS", "KmsService", "as_key_access", "key_access_from_sources", "ENV_KEY_LIST", "ENV_KEY_LIST_FILE",
           "DEFAULT_TOKEN_VARIABLES"]

ENV_KEY_LIST = "SECURE_BLOOM_KEY_LIST"
ENV_KEY_LIST_FILE = "SECURE_BLOOM_KEY_LIST_FILE"
#: Where the OpenBao/Vault token is looked for when no variable is named.
DEFAULT_TOKEN_VARIABLES = ("VAULT_TOKEN", "BAO_TOKEN")


class KmsService(str, Enum):
    """The KMS a command's master keys are in (CLI ``--kms``)."""

    TRANSIT = "transit"  # OpenBao / Vault transit at --kms-url
    AWS = "aws"          # AWS KMS (--kms-region, --kms-endpoint, --kms-profile)

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True)
class KeyAccess:
    """The caller's key sources for encrypted files, shared by every reader, writer and the CLI.

    Unwrapped key encryption keys (and the data keys and chunk contexts derived from them) are
    cached for ``cache_lifetime_s``: reading 1000 files costs one KMS call per KEK, so one per
    master key for files that share their KEKs (written within one KEK lifetime by one writer
    configuration or one Spark JVM), one per file for files with KEKs of their own.

    Parameters
    ----------
    kms : KmsClient or callable, optional
        A :class:`~secure_bloom.kms.KmsClient`, pyarrow's factory ``(KmsConnectionConfig) ->
        KmsClient`` (what ``write_table(kms=...)`` and ``pyarrow.parquet.encryption.CryptoFactory``
        take, e.g. ``lambda cfg: MyClient(cfg)``) or a factory ``(kms_instance_id,
        kms_instance_url) -> KmsClient``.
    explicit : ExplicitKeys or mapping of str to bytes, optional
        Keys by key id, for files whose key metadata is a plain key id.
    aad_prefix : bytes or str, optional
        The AAD prefix of files that do not store theirs (str: UTF-8).
    cache_lifetime_s : float, default 600
        How long unwrapped keys are kept; 0: every read asks the KMS.
    allow_unverified_footer : bool, default False
        With keys given, a signed plaintext footer whose signing key cannot be obtained is an
        error (otherwise whoever rewrites the footer's signing key id could switch verification
        off). True reads such files anyway, with ``footer.signature_verified`` left None: only
        plaintext columns and columns whose own keys are available can then be read.
    unwrapper : KeyUnwrapper, optional
        Made from the other fields when not given (tests and the Spark workers pass their own).

    Raises
    ------
    TypeError
        ``explicit`` is neither :class:`~secure_bloom.kms.ExplicitKeys` nor a mapping, or
        ``aad_prefix`` is neither bytes nor str.

    Examples
    --------
    >>> import os
    >>> from secure_bloom.kms import KeyListKms
    >>> from secure_bloom.parquet import KeyAccess
    >>> keys = KeyAccess(kms=KeyListKms({"footer_key": os.urandom(16)}), aad_prefix="tenant-7")
    >>> keys.has_keys, keys.aad_prefix
    (True, b'tenant-7')
    """

    kms: Any = None
    explicit: ExplicitKeys | None = None
    aad_prefix: bytes | None = None
    cache_lifetime_s: float = 600.0
    allow_unverified_footer: bool = False
    unwrapper: KeyUnwrapper = field(default=None, compare=False, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        explicit = self.explicit
        if explicit is not None and not isinstance(explicit, ExplicitKeys):
            if not isinstance(explicit, Mapping):
                raise TypeError("explicit must be ExplicitKeys or a mapping of key id -> key bytes")
            object.__setattr__(self, "explicit", ExplicitKeys(explicit))
        prefix = self.aad_prefix
        if isinstance(prefix, str):
            object.__setattr__(self, "aad_prefix", prefix.encode("utf-8"))
        elif prefix is not None:
            if not isinstance(prefix, (bytes, bytearray, memoryview)):
                raise TypeError(f"aad_prefix must be bytes or str, got {type(prefix).__name__}")
            object.__setattr__(self, "aad_prefix", bytes(prefix))
        if self.unwrapper is None:
            object.__setattr__(self, "unwrapper", KeyUnwrapper(
                instance_factory(self.kms), explicit_keys=self.explicit, cache_lifetime_s=self.cache_lifetime_s))

    @property
    def has_keys(self) -> bool:
        """True if any key source (KMS or explicit keys) is set."""
        return self.kms is not None or self.explicit is not None

    def retriever(self, data_file: str | os.PathLike[str], *,
                  load_sidecar: Callable[[], KeyMaterialStore] | None = None) -> FileKeyUnwrapper:
        """``key_metadata -> key`` for the file at ``data_file`` (finds its sidecar beside it, or
        reads it with ``load_sidecar``: a file on an object store), sharing this access's KEK
        cache.

        Parameters
        ----------
        data_file : str or os.PathLike
            The Parquet file (its sidecar holds external key material).
        load_sidecar : callable, optional
            Loads the sidecar instead (an object store, material not yet on disk).

        Returns
        -------
        FileKeyUnwrapper
            The per-file callable (:meth:`~secure_bloom.kms.KeyUnwrapper.for_file`).

        Raises
        ------
        None
            Nothing is unwrapped or loaded until a key is asked for.
        """
        return self.unwrapper.for_file(data_file, load_sidecar=load_sidecar)

    def __repr__(self) -> str:
        return (f"KeyAccess(kms={type(self.kms).__name__ if self.kms is not None else None}, "
                f"explicit={self.explicit!r}, aad_prefix={'set' if self.aad_prefix is not None else None}"
                + (", allow_unverified_footer=True)" if self.allow_unverified_footer else ")"))


#: No keys at all: plaintext files, and plaintext columns of plaintext-footer files.
NO_KEYS = KeyAccess()


def as_key_access(keys: Any) -> KeyAccess | None:
    """``keys=`` of the read functions: a :class:`KeyAccess`, or what ``write_table(kms=...)``
    takes, the same objects on both sides.

    Parameters
    ----------
    keys : KeyAccess, KMS client, pyarrow KmsClient factory or None
        A KMS client (``wrap_key`` and ``unwrap_key``) or a factory becomes ``KeyAccess(kms=keys)``
        (pass a KeyAccess of your own to share its KEK cache across calls).

    Returns
    -------
    KeyAccess or None
        None for None.

    Raises
    ------
    TypeError
        Anything else (a mapping of explicit keys goes in ``KeyAccess(explicit=...)``).
    """
    if keys is None or isinstance(keys, KeyAccess):
        return keys
    if is_kms_client(keys) or (callable(keys) and not isinstance(keys, Mapping)):
        return KeyAccess(kms=keys)
    hint = " (explicit keys: KeyAccess(explicit={key id: key bytes}))" if isinstance(keys, Mapping) else ""
    raise TypeError(f"keys must be a KeyAccess, a KMS client (wrap_key, unwrap_key) or a pyarrow KmsClient factory, "
                    f"got {type(keys).__name__}{hint}")


def _key_list_text(key_list: str | None, key_list_file: str | None, kms_url: str | None,
                   environ: Mapping[str, str]) -> str | None:
    """The key-list text from the arguments or the environment, or None."""
    if key_list is not None and key_list_file is not None:
        raise ConfigurationError("give --key-list or --key-list-file, not both")
    if key_list is not None:
        return key_list
    path = key_list_file
    if path is None and kms_url is None:
        if environ.get(ENV_KEY_LIST):
            return environ[ENV_KEY_LIST]
        path = environ.get(ENV_KEY_LIST_FILE) or None
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise ConfigurationError(f"{path}: {e.strerror or type(e).__name__}") from None
    except UnicodeDecodeError:
        raise ConfigurationError(f"{path}: the key-list file is not UTF-8 text") from None


def key_access_from_sources(*, key_list: str | None = None, key_list_file: str | None = None,
                            key_specs: Sequence[str] = (), aad_prefix: str | None = None,
                            kms_url: str | None = None, kms_token_env: str | None = None,
                            kms_mount: str = "transit", kms: KmsService | str | None = None,
                            kms_region: str | None = None, kms_endpoint: str | None = None,
                            kms_profile: str | None = None, environ: Mapping[str, str] | None = None) -> KeyAccess:
    """A :class:`KeyAccess` from the key options of the CLI (and the pytest plugin).

    ``key_list`` (``id:BASE64, ...``) or ``key_list_file`` -> the key-list KMS; else ``kms_url``
    with the token in the variable ``kms_token_env`` (default ``VAULT_TOKEN``, then ``BAO_TOKEN``)
    -> OpenBao/Vault transit; ``kms="aws"`` -> AWS KMS (:class:`~secure_bloom.kms.AwsKms` in
    ``kms_region`` at ``kms_endpoint`` with profile ``kms_profile``, credentials from boto3's chain);
    without any, ``SECURE_BLOOM_KEY_LIST`` then ``SECURE_BLOOM_KEY_LIST_FILE``. ``key_specs`` are
    ``ID=base64:...|hex:...|text:...``.

    Parameters
    ----------
    key_list : str, optional
        A key list (``--key-list``).
    key_list_file : str, optional
        A file holding one (``--key-list-file``, UTF-8).
    key_specs : sequence of str, default ()
        Explicit keys (``--key``), for files whose key metadata is a bare key id.
    aad_prefix : str, optional
        The AAD prefix of files that do not store theirs (UTF-8).
    kms_url : str, optional
        The OpenBao/Vault address (``--kms-url``).
    kms_token_env : str, optional
        The variable holding its token.
    kms_mount : str, default "transit"
        The transit engine's mount.
    kms : KmsService or str, optional
        ``transit`` (needs ``kms_url``) or ``aws``.
    kms_region, kms_endpoint, kms_profile : str, optional
        AWS KMS's region, endpoint and profile (with ``kms="aws"`` only).
    environ : mapping of str to str, optional
        The environment read (default ``os.environ``).

    Returns
    -------
    KeyAccess
        The key sources, ready to share across files.

    Raises
    ------
    ConfigurationError
        Names what is wrong (sources given twice, a missing token or region, an unreadable
        key-list file, a bad ``--kms``), never a secret.
    """
    env = os.environ if environ is None else environ
    try:
        service = None if kms is None else KmsService(kms)
    except ValueError:
        raise ConfigurationError(f"--kms must be one of {', '.join(k.value for k in KmsService)}") from None
    aws = service is KmsService.AWS
    if not aws and (kms_region is not None or kms_endpoint is not None or kms_profile is not None):
        raise ConfigurationError("--kms-region, --kms-endpoint and --kms-profile go with --kms aws")
    if aws and kms_url is not None:
        raise ConfigurationError("--kms-url is for --kms transit; give AWS KMS another endpoint with --kms-endpoint")
    if service is KmsService.TRANSIT and kms_url is None:
        raise ConfigurationError("--kms transit needs --kms-url")
    text = _key_list_text(key_list, key_list_file, kms_url if not aws else "aws", env)
    if text is not None and (kms_url is not None or aws):
        raise ConfigurationError(f"give either a key list or {'--kms aws' if aws else '--kms-url'}, not both")
    client: Any = None
    if text is not None:
        client = KeyListKms(text)
    elif aws:
        client = AwsKms(kms_region, endpoint_url=kms_endpoint, profile=kms_profile)
    elif kms_url is not None:
        token_env = (kms_token_env,) if kms_token_env else DEFAULT_TOKEN_VARIABLES
        token = next((env[name] for name in token_env if env.get(name)), None)
        if token is None:
            raise ConfigurationError(
                f"--kms-url needs a token: set the environment variable {' or '.join(token_env)}"
                f"{'' if kms_token_env else ' (or name another with --kms-token-env)'}")
        try:
            client = OpenBaoTransitKms(kms_url, token=token, mount=kms_mount)
        except ValueError as e:
            raise ConfigurationError(f"--kms-url: {e}") from None
    explicit = ExplicitKeys.from_specs(list(key_specs)) if key_specs else None
    prefix = aad_prefix.encode("utf-8") if aad_prefix is not None else None
    return KeyAccess(kms=client, explicit=explicit, aad_prefix=prefix)

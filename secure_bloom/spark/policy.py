"""Encryption and Bloom filter settings for Spark / parquet-java writers, as one value.

An :class:`EncryptionPolicy` turns into the Hadoop properties of parquet-java's
PropertiesDrivenCryptoFactory and Bloom filter writer (SPEC_NOTES section 7):

* ``parquet.crypto.factory.class``, ``parquet.encryption.kms.client.class`` and the KMS's own
  properties (``parquet.encryption.key.list`` for :class:`KeyListKmsConfig`;
  ``parquet.encryption.kms.instance.url``, ``parquet.encryption.key.access.token`` and
  ``secure_bloom.kms.transit.mount`` for :class:`TransitKmsConfig`);
* ``parquet.encryption.footer.key`` and ``parquet.encryption.column.keys`` ("mk1:a,b;mk2:c"), or
  ``parquet.encryption.uniform.key`` when no column keys are given (every column and the footer
  under the footer key);
* ``parquet.encryption.plaintext.footer``, ``.algorithm``, ``.double.wrapping``,
  ``.data.key.length.bits``;
* ``parquet.bloom.filter.enabled#col``, ``.expected.ndv#col``, ``.fpp#col`` and
  ``parquet.bloom.filter.max.bytes``.

Secrets (the key list, the KMS token) appear only in :meth:`EncryptionPolicy.hadoop_conf`, whose
mapping redacts them in its repr; never in a policy's repr, and never in :meth:`write_options`. A
transit token is read from the environment variable the policy names, when the conf is built.
"""

from __future__ import annotations

import base64
import os
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, Union, cast

from secure_bloom.errors import KeyAccessDeniedError, KeyNotFoundError
from secure_bloom.kms.key_list import parse_key_list

__all__ = [
    "KEY_LIST_CLIENT",
    "SECRET_PROPERTIES",
    "TRANSIT_CLIENT",
    "BloomFilterSpec",
    "EncryptionPolicy",
    "HadoopConf",
    "KeyListKmsConfig",
    "TransitKmsConfig",
]

CRYPTO_FACTORY = "org.apache.parquet.crypto.keytools.PropertiesDrivenCryptoFactory"
KEY_LIST_CLIENT = "io.securebloom.KeyListKmsClient"
TRANSIT_CLIENT = "io.securebloom.VaultTransitKmsClient"
SECRET_PROPERTIES = frozenset({"parquet.encryption.key.list", "parquet.encryption.key.access.token"})
"""Hadoop properties that hold secrets: redacted in reprs, never passed as writer options."""

Algorithm = Literal["AES_GCM_V1", "AES_GCM_CTR_V1"]
_ALGORITHMS = ("AES_GCM_V1", "AES_GCM_CTR_V1")
_ID = re.compile(r"[A-Za-z0-9._-]+")  # master key ids: also valid transit key names
_SEPARATORS = set(",;:#\n=")


@dataclass(frozen=True)
class KeyListKmsConfig:
    """Master keys given inline as a key list ("id:base64, ..."; see
    :func:`secure_bloom.kms.key_list.parse_key_list`), served on the JVM by
    io.securebloom.KeyListKmsClient. Its repr shows the master key ids only.

    Parameters
    ----------
    key_list : str
        The key list (``#`` comment lines allowed).

    Raises
    ------
    secure_bloom.errors.MalformedKeyMaterialError
        The key list does not parse (messages name ids only).
    """

    key_list: str = field(repr=False)

    def __post_init__(self) -> None:
        parse_key_list(self.key_list)  # fail early, naming ids only

    @property
    def master_key_ids(self) -> tuple[str, ...]:
        """The master key ids of the key list (never the keys)."""
        return tuple(parse_key_list(self.key_list))

    def __repr__(self) -> str:
        return f"KeyListKmsConfig(master_key_ids={self.master_key_ids!r})"

    def hadoop_conf(self) -> dict[str, str]:
        """The Hadoop properties of this KMS (the key list included: a secret).

        Returns
        -------
        dict of str to str
            The properties.

        Raises
        ------
        None
            Nothing of its own.
        """
        canonical = ", ".join(f"{key_id}:{base64.b64encode(key).decode()}"
                              for key_id, key in parse_key_list(self.key_list).items())
        return {"parquet.encryption.kms.client.class": KEY_LIST_CLIENT,
                "parquet.encryption.key.list": canonical}


@dataclass(frozen=True)
class TransitKmsConfig:
    """OpenBao / Vault transit at ``url``; the token is read from the environment variable
    ``token_env`` when the Hadoop conf is built (its value is never stored).

    Parameters
    ----------
    url : str
        The server (``http://`` or ``https://``).
    token_env : str, default "VAULT_TOKEN"
        The environment variable holding the token.
    mount : str, default "transit"
        The transit engine's mount path.

    Raises
    ------
    ValueError
        ``url`` is not http(s), or ``token_env`` is empty.
    """

    url: str
    token_env: str = "VAULT_TOKEN"
    mount: str = "transit"

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https://, not {self.url!r}")
        if not self.token_env:
            raise ValueError("token_env must name an environment variable")

    def hadoop_conf(self) -> dict[str, str]:
        """The Hadoop properties of this KMS, the token read from ``token_env`` now.

        Returns
        -------
        dict of str to str
            The properties (the token included: a secret).

        Raises
        ------
        secure_bloom.errors.KeyAccessDeniedError
            ``token_env`` is not set.
        """
        token = os.environ.get(self.token_env)
        if not token:
            raise KeyAccessDeniedError(
                f"environment variable {self.token_env} (the KMS token) is not set")
        return {"parquet.encryption.kms.client.class": TRANSIT_CLIENT,
                "parquet.encryption.kms.instance.url": self.url,
                "parquet.encryption.key.access.token": token,
                "secure_bloom.kms.transit.mount": self.mount}


Kms = Union[KeyListKmsConfig, TransitKmsConfig]


@dataclass(frozen=True)
class BloomFilterSpec:
    """Per-column Bloom filter sizing: expected distinct values and false-positive probability.
    Unset values fall back to parquet-java's defaults (no ndv: the max size; fpp 0.01).

    Parameters
    ----------
    ndv : int, optional
        Expected distinct values per file.
    fpp : float, optional
        False-positive probability, in (0, 1).

    Raises
    ------
    ValueError
        ``ndv`` <= 0 or ``fpp`` outside (0, 1).
    """

    ndv: int | None = None
    fpp: float | None = None

    def __post_init__(self) -> None:
        if self.ndv is not None and self.ndv <= 0:
            raise ValueError(f"ndv must be positive, not {self.ndv}")
        if self.fpp is not None and not 0.0 < self.fpp < 1.0:
            raise ValueError(f"fpp must be in (0, 1), not {self.fpp}")


class HadoopConf(dict[str, str]):
    """A plain dict of Hadoop properties whose repr hides secret values."""

    def __repr__(self) -> str:
        shown = {k: ("<redacted>" if k in SECRET_PROPERTIES else v) for k, v in self.items()}
        return f"HadoopConf({shown!r})"

    __str__ = __repr__


def _check_name(what: str, name: str) -> None:
    if not name or _SEPARATORS & set(name) or name != name.strip():
        raise ValueError(f"{what} {name!r} is empty or contains one of , ; : # = or spaces at the ends")


def _keys_to_columns(column_keys: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """``{key id: [columns]}`` (pyarrow's shape) as given, or from the former ``{column: key id}``
    (every value a str; a DeprecationWarning). A column under two keys is a ValueError."""
    if not isinstance(column_keys, Mapping):
        raise TypeError(f"column_keys must be a mapping of master key id -> column paths, "
                        f"got {type(column_keys).__name__}")
    values = list(column_keys.values())
    if values and all(isinstance(v, str) for v in values):
        warnings.warn("EncryptionPolicy(column_keys={column: key_id}) is deprecated: give pyarrow's shape "
                      "{key_id: [columns]}", DeprecationWarning, stacklevel=4)
        by_key: dict[str, list[str]] = {}
        for column, key_id in column_keys.items():
            by_key.setdefault(key_id, []).append(column)
        column_keys = by_key
    out: dict[str, tuple[str, ...]] = {}
    owner: dict[str, str] = {}
    for key_id, columns in column_keys.items():
        if isinstance(columns, str) or not isinstance(columns, Iterable):
            raise TypeError(f"column_keys[{key_id!r}] must be a list of column paths (pyarrow's shape "
                            "{key_id: [columns]})")
        out[key_id] = tuple(columns)
        for column in out[key_id]:
            if column in owner and owner[column] != key_id:
                raise ValueError(f"column_keys gives column {column!r} two keys ({owner[column]!r} and {key_id!r})")
            owner[column] = key_id
    return out


@dataclass(frozen=True)
class EncryptionPolicy:
    """How parquet-java should encrypt a file and which Bloom filters it should write.

    ``column_keys`` maps master key ids to the column paths ("a.b") they encrypt, pyarrow's
    shape (``{"pii_key": ["email", "ssn"]}``, as ``EncryptionConfiguration`` and ``write_table``
    take it); when empty, every column is encrypted with the footer key (uniform encryption).
    The former shape ``{column: key id}`` is still read, with a DeprecationWarning. ``bloom_filters`` maps column paths to a
    :class:`BloomFilterSpec` (an iterable of paths means default sizing). Columns with a Bloom
    filter but no key stay plaintext, and so do their filters.

    Parameters
    ----------
    footer_key : str
        The footer's master key id.
    kms : KeyListKmsConfig or TransitKmsConfig
        The KMS parquet-java's workers use.
    column_keys : mapping of str to sequence of str, optional
        Master key id -> the column paths it encrypts.
    bloom_filters : mapping of str to BloomFilterSpec, or iterable of str, optional
        Columns to give Bloom filters.
    plaintext_footer : bool, default False
        A signed plaintext footer instead of an encrypted one.
    algorithm : {"AES_GCM_V1", "AES_GCM_CTR_V1"}
        The file's algorithm (Bloom filters are GCM under both).
    double_wrapping : bool, default True
        Wrap data keys under KEKs.
    data_key_length_bits : int, default 128
        128, 192 or 256.
    bloom_filter_max_bytes : int, optional
        ``parquet.bloom.filter.max.bytes``.

    Raises
    ------
    TypeError
        A ``bloom_filters`` value is not a :class:`BloomFilterSpec`, or ``kms`` is neither config.
    ValueError
        An unknown algorithm, a bad data key length, a non-positive ``bloom_filter_max_bytes``,
        or a master key id that is not a valid transit key name.
    secure_bloom.errors.KeyNotFoundError
        A master key id is not in the key list.

    Examples
    --------
    >>> import base64, os
    >>> from secure_bloom.spark.policy import BloomFilterSpec, EncryptionPolicy, KeyListKmsConfig
    >>> key_list = ", ".join(f"{k}:{base64.b64encode(os.urandom(16)).decode()}" for k in ("footer_key", "pii_key"))
    >>> policy = EncryptionPolicy(footer_key="footer_key", kms=KeyListKmsConfig(key_list=key_list),
    ...                           column_keys={"pii_key": ["email"]}, bloom_filters={"email": BloomFilterSpec(ndv=10_000)})
    >>> policy.write_options()["parquet.bloom.filter.enabled#email"]
    'true'
    """

    footer_key: str
    kms: Kms
    column_keys: Mapping[str, Sequence[str]] = field(default_factory=dict)
    bloom_filters: Mapping[str, BloomFilterSpec] | Iterable[str] = field(default_factory=dict)
    plaintext_footer: bool = False
    algorithm: Algorithm = "AES_GCM_V1"
    double_wrapping: bool = True
    data_key_length_bits: int = 128
    bloom_filter_max_bytes: int | None = None

    def __post_init__(self) -> None:
        _check_name("footer key id", self.footer_key)
        column_keys = MappingProxyType(_keys_to_columns(self.column_keys))
        for key_id, columns in column_keys.items():
            _check_name("master key id", key_id)
            for column in columns:
                _check_name("column", column)
        if isinstance(self.bloom_filters, Mapping):
            blooms = dict(self.bloom_filters)
        else:
            blooms = {column: BloomFilterSpec() for column in self.bloom_filters}
        for column, spec in blooms.items():
            _check_name("column", column)
            if not isinstance(spec, BloomFilterSpec):
                raise TypeError(f"bloom_filters[{column!r}] must be a BloomFilterSpec")
        object.__setattr__(self, "column_keys", column_keys)
        object.__setattr__(self, "bloom_filters", MappingProxyType(blooms))
        if self.algorithm not in _ALGORITHMS:
            raise ValueError(f"algorithm must be one of {_ALGORITHMS}, not {self.algorithm!r}")
        if self.data_key_length_bits not in (128, 192, 256):
            raise ValueError(f"data_key_length_bits must be 128, 192 or 256, not {self.data_key_length_bits}")
        if self.bloom_filter_max_bytes is not None and self.bloom_filter_max_bytes <= 0:
            raise ValueError(f"bloom_filter_max_bytes must be positive, not {self.bloom_filter_max_bytes}")
        if isinstance(self.kms, KeyListKmsConfig):
            known = set(self.kms.master_key_ids)
            for key_id in {self.footer_key, *column_keys}:
                if key_id not in known:
                    raise KeyNotFoundError(f"master key id {key_id!r} is not in the key list")
        elif isinstance(self.kms, TransitKmsConfig):
            for key_id in {self.footer_key, *column_keys}:
                if not _ID.fullmatch(key_id):
                    raise ValueError(f"master key id {key_id!r} is not a valid transit key name")
        else:
            raise TypeError("kms must be a KeyListKmsConfig or a TransitKmsConfig")

    @property
    def bloom_filter_specs(self) -> Mapping[str, BloomFilterSpec]:
        """``bloom_filters`` as normalised by the constructor (column -> spec)."""
        return cast("Mapping[str, BloomFilterSpec]", self.bloom_filters)

    def _column_keys_property(self) -> str:
        return ";".join(f"{key_id}:{','.join(cols)}" for key_id, cols in self.column_keys.items())

    def write_options(self) -> dict[str, str]:
        """The non-secret properties (everything but the key list and token), fit for
        ``DataFrameWriter.options(**...)``. Spark copies writer options into the write's Hadoop
        conf; secrets must come from the session's Hadoop conf (:func:`apply_policy`), since writer
        options show up in query plans.

        Returns
        -------
        dict of str to str
            Properties without secrets.

        Raises
        ------
        None
            Nothing of its own.
        """
        return {k: v for k, v in self.hadoop_conf().items() if k not in SECRET_PROPERTIES}

    def hadoop_conf(self) -> HadoopConf:
        """All Hadoop properties for writing and reading with this policy, secrets included.

        Returns
        -------
        dict of str to str
            Every property (secrets included).

        Raises
        ------
        secure_bloom.errors.KeyAccessDeniedError
            A transit KMS's token variable is not set.
        """
        conf = HadoopConf({"parquet.crypto.factory.class": CRYPTO_FACTORY})
        conf.update(self.kms.hadoop_conf())
        if self.column_keys:
            conf["parquet.encryption.footer.key"] = self.footer_key
            conf["parquet.encryption.column.keys"] = self._column_keys_property()
        else:
            conf["parquet.encryption.uniform.key"] = self.footer_key
        conf["parquet.encryption.plaintext.footer"] = str(self.plaintext_footer).lower()
        conf["parquet.encryption.algorithm"] = self.algorithm
        conf["parquet.encryption.double.wrapping"] = str(self.double_wrapping).lower()
        conf["parquet.encryption.data.key.length.bits"] = str(self.data_key_length_bits)
        for column, spec in self.bloom_filter_specs.items():
            conf[f"parquet.bloom.filter.enabled#{column}"] = "true"
            if spec.ndv is not None:
                conf[f"parquet.bloom.filter.expected.ndv#{column}"] = str(spec.ndv)
            if spec.fpp is not None:
                conf[f"parquet.bloom.filter.fpp#{column}"] = repr(spec.fpp)
        if self.bloom_filter_max_bytes is not None:
            conf["parquet.bloom.filter.max.bytes"] = str(self.bloom_filter_max_bytes)
        return conf

"""Encryption and Bloom filter settings for Spark / parquet-java writers, as one value.

An :class:`EncryptionPolicy` turns into the Hadoop properties of parquet-java's
PropertiesDrivenCryptoFactory and Bloom filter writer (SPEC_NOTES section 7):

* ``parquet.crypto.factory.class``, ``parquet.encryption.kms.client.class`` and the KMS's own
  properties (``parquet.encryption.key.list`` for :class:`KeyListKmsConfig`;
  ``parquet.encryption.kms.instance.url``, ``parquet.encryption.key.access.token`` and
  ``secure_bloom.kms.transit.mount`` for :class:`TransitKmsConfig`; ``secure_bloom.kms.aws.*``
  for :class:`AwsKmsConfig`);
* ``parquet.encryption.footer.key`` and ``parquet.encryption.column.keys`` ("mk1:a,b;mk2:c"), or
  ``parquet.encryption.uniform.key`` when no column keys are given (every column and the footer
  under the footer key);
* ``parquet.encryption.plaintext.footer``, ``.algorithm``, ``.double.wrapping``,
  ``.data.key.length.bits``;
* ``parquet.bloom.filter.enabled#col``, ``.expected.ndv#col``, ``.fpp#col`` and
  ``parquet.bloom.filter.max.bytes``;
* for a column with ``sizing=FilterSizing.FIXED`` (:class:`BloomFilterSpec`; length hiding,
  docs/security-model/filter-sizes.md): ``parquet.enable.dictionary#col=false``, and
  ``parquet.bloom.filter.adaptive.enabled=false`` when the spec gives no ndv.

parquet-java (1.17, ``ColumnValueCollector.initBloomFilter``) sizes every filter of a column from
its configured ``expected.ndv``, or without one at ``max.bytes`` (or, with
``parquet.bloom.filter.adaptive.enabled``, picks one of several candidate sizes per row group by
its distinct count), never from the row group's values otherwise; so with an ndv its sizes are
equal across row groups and files. ``FIXED`` closes the two gaps left: a chunk whose pages are
all dictionary-encoded gets no filter at all, so the presence of a filter tells low-cardinality
row groups apart (and the dictionary page's length tells their cardinality): dictionary encoding
is turned off for the column; and without an ndv adaptive sizing would vary: it is turned off (a
global switch in parquet-java, no ``#col`` form; an ndv takes precedence over it anyway). Where it
is not the same guarantee as our writers': the size comes from ``ndv`` or ``num_bytes`` (or
``max.bytes``), not from the data (parquet-java cannot see the largest row group first), and a
row group with more distinct values than ``ndv`` gets a higher fpp, not a bigger filter;
``max.bytes`` caps every size, unrounded (a cap that is no power of two gives filters of exactly
that size: equal, but Arrow C++ refuses them), so ``num_bytes`` above the cap is refused here; and
a writer option (``df.write.option(...)``) overrides these session properties.

Secrets (the key list, the KMS token, AWS credentials) appear only in :meth:`EncryptionPolicy.hadoop_conf`, whose
mapping redacts them in its repr; never in a policy's repr, and never in :meth:`write_options`. A
transit token (and AWS credentials) are read from the environment variables the policy names, when
the conf is built.
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
from secure_bloom.filter import optimal_num_bytes
from secure_bloom.kms.key_list import parse_key_list
from secure_bloom.parquet.write.options import check_ndv
from secure_bloom.spec import DEFAULT_FPP, MIN_BITSET_BYTES, WRITER_DEFAULT_MAX_BYTES
from secure_bloom.types import FilterSizing

__all__ = [
    "AWS_CLIENT",
    "AwsKmsConfig",
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
AWS_CLIENT = "io.securebloom.AwsKmsClient"
AWS_ACCESS_KEY_PROPERTY = "secure_bloom.kms.aws.access.key.id"
AWS_SECRET_KEY_PROPERTY = "secure_bloom.kms.aws.secret.access.key"
AWS_SESSION_TOKEN_PROPERTY = "secure_bloom.kms.aws.session.token"
SECRET_PROPERTIES = frozenset({"parquet.encryption.key.list", "parquet.encryption.key.access.token",
                               AWS_ACCESS_KEY_PROPERTY, AWS_SECRET_KEY_PROPERTY, AWS_SESSION_TOKEN_PROPERTY})
"""Hadoop properties that hold secrets: redacted in reprs, never passed as writer options."""

Algorithm = Literal["AES_GCM_V1", "AES_GCM_CTR_V1"]
_ALGORITHMS = ("AES_GCM_V1", "AES_GCM_CTR_V1")
_ID = re.compile(r"[A-Za-z0-9._-]+")  # master key ids: also valid transit key names
_AWS_ID = re.compile(r"(?:alias/[A-Za-z0-9/_-]+|(?:mrk-)?[A-Fa-f0-9-]{32,36})")  # key ids and alias names
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


@dataclass(frozen=True)
class AwsKmsConfig:
    """AWS KMS in ``region`` (at ``endpoint``, default ``https://kms.<region>.amazonaws.com``),
    served on the JVM by io.securebloom.AwsKmsClient (JDK only, SigV4-signed requests).

    Credentials: with ``credentials_env`` True (default) the access key id, secret key and
    session token are read from the environment variables named, when the Hadoop conf is built,
    and travel as (redacted) Hadoop properties; with False nothing is put in the conf and the
    JVM reads ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN`` from its
    own environment (executors included). ``deadline_s`` bounds each KMS call on the JVM,
    retries included. Master key ids are key ids or alias names (``alias/...``): parquet-java's
    ``column.keys`` syntax cannot carry the ``:`` of an ARN.

    Parameters
    ----------
    region : str
        The AWS region (``eu-west-1``...).
    endpoint : str, optional
        The KMS endpoint URL (``http://`` or ``https://``; e.g. a local emulator).
    credentials_env : bool, default True
        Put the credentials from the environment into the Hadoop conf (False: the JVM reads its
        own environment).
    access_key_env, secret_key_env, session_token_env : str
        The environment variables the credentials are read from (default ``AWS_ACCESS_KEY_ID``,
        ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``).
    deadline_s : float, default 30.0
        Seconds each KMS call may take on the JVM, retries included.

    Raises
    ------
    ValueError
        ``region`` is not a region name, ``endpoint`` not an http(s) URL, or ``deadline_s``
        not > 0.
    """

    region: str
    endpoint: str | None = None
    credentials_env: bool = True
    access_key_env: str = "AWS_ACCESS_KEY_ID"
    secret_key_env: str = "AWS_SECRET_ACCESS_KEY"
    session_token_env: str = "AWS_SESSION_TOKEN"
    deadline_s: float = 30.0

    def __post_init__(self) -> None:
        if not self.region or not re.fullmatch(r"[a-z0-9-]+", self.region):
            raise ValueError(f"region {self.region!r} is not an AWS region name")
        if self.endpoint is not None and not self.endpoint.startswith(("http://", "https://")):
            raise ValueError(f"endpoint must start with http:// or https://, not {self.endpoint!r}")
        if not self.deadline_s > 0:
            raise ValueError(f"deadline_s must be > 0, not {self.deadline_s}")

    def hadoop_conf(self) -> dict[str, str]:
        """The Hadoop properties of this KMS: the client class, region, deadline and endpoint,
        and with ``credentials_env`` the credentials (secrets: the policy's :class:`HadoopConf`
        that holds them hides them in its repr).

        Returns
        -------
        dict of str to str
            The properties.

        Raises
        ------
        secure_bloom.errors.KeyAccessDeniedError
            With ``credentials_env``: the access key id or secret key variable is not set.
        """
        conf = {"parquet.encryption.kms.client.class": AWS_CLIENT,
                "secure_bloom.kms.aws.region": self.region,
                "secure_bloom.kms.aws.deadline.seconds": repr(float(self.deadline_s))}
        if self.endpoint is not None:
            conf["secure_bloom.kms.aws.endpoint"] = self.endpoint
        if self.credentials_env:
            access, secret = os.environ.get(self.access_key_env), os.environ.get(self.secret_key_env)
            if not access or not secret:
                raise KeyAccessDeniedError(
                    f"environment variables {self.access_key_env} and {self.secret_key_env} (the AWS "
                    "credentials) are not both set")
            conf[AWS_ACCESS_KEY_PROPERTY] = access
            conf[AWS_SECRET_KEY_PROPERTY] = secret
            token = os.environ.get(self.session_token_env)
            if token:
                conf[AWS_SESSION_TOKEN_PROPERTY] = token
        return conf


Kms = Union[KeyListKmsConfig, TransitKmsConfig, AwsKmsConfig]


@dataclass(frozen=True)
class BloomFilterSpec:
    """Per-column Bloom filter sizing: expected distinct values and false-positive probability.
    Unset values fall back to parquet-java's defaults (no ndv: the max size; fpp 0.01).

    ``sizing=FilterSizing.FIXED`` (or ``"fixed"``) makes the filters' sizes equal across row
    groups and files (module docstring: dictionary encoding and adaptive sizing off);
    ``num_bytes`` (a power of two; ``FIXED`` implied) is that size, written as the ``ndv`` that
    parquet-java sizes to exactly ``num_bytes`` at ``fpp``.

    Parameters
    ----------
    ndv : int, optional
        Expected distinct values per file (``parquet.bloom.filter.expected.ndv``).
    fpp : float, optional
        False-positive probability, in (0, 1).
    sizing : FilterSizing or str, optional
        ``"fixed"``: one filter size across row groups and files; ``"per_row_group"`` (or None,
        unless ``num_bytes`` is given) leaves sizing to parquet-java.
    num_bytes : int, optional
        That one size: a power of two of at least 32 bytes (``FIXED`` implied).

    Raises
    ------
    ValueError
        ``ndv`` <= 0, ``fpp`` outside (0, 1), ``num_bytes`` not a power of two >= 32, both
        ``ndv`` and ``num_bytes``, ``num_bytes`` with ``"per_row_group"``, or an unknown
        ``sizing``.
    """


    ndv: int | None = None
    fpp: float | None = None
    sizing: FilterSizing | None = None
    num_bytes: int | None = None

    def __post_init__(self) -> None:
        check_ndv(self.ndv)
        if self.fpp is not None and not 0.0 < self.fpp < 1.0:
            raise ValueError(f"fpp must be in (0, 1), not {self.fpp}")
        if self.num_bytes is not None:
            n = self.num_bytes
            if isinstance(n, bool) or not isinstance(n, int) or n < MIN_BITSET_BYTES or n & (n - 1):
                raise ValueError(f"num_bytes must be a power of two of at least {MIN_BITSET_BYTES}, not {n!r}")
            if self.ndv is not None:
                raise ValueError("give ndv or num_bytes, not both (num_bytes is turned into parquet-java's ndv)")
        sizing = (FilterSizing.FIXED if self.num_bytes is not None else None) if self.sizing is None \
            else FilterSizing.coerce(self.sizing)
        if sizing is FilterSizing.PER_ROW_GROUP and self.num_bytes is not None:
            raise ValueError("num_bytes gives every filter one size: it needs sizing 'fixed'")
        object.__setattr__(self, "sizing", sizing)

    @property
    def fixed(self) -> bool:
        """Whether the filters must have one size (``sizing`` FIXED)."""
        return self.sizing is FilterSizing.FIXED

    def expected_ndv(self) -> int | None:
        """The ``parquet.bloom.filter.expected.ndv`` to write: ``ndv``, or for ``num_bytes`` the
        distinct count parquet-java sizes to exactly ``num_bytes`` at ``fpp`` (None: unset).

        Returns
        -------
        int or None
            ``ndv`` without ``num_bytes``; else the fewest distinct values for which
            parquet-java's sizing (:func:`~secure_bloom.filter.optimal_num_bytes`) gives
            ``num_bytes``.

        Raises
        ------
        ValueError
            No distinct count gives exactly ``num_bytes`` at ``fpp``.
        """

        if self.num_bytes is None:
            return self.ndv
        fpp = DEFAULT_FPP if self.fpp is None else self.fpp
        low, high = 1, 1 << 31
        while low < high:  # the fewest values parquet-java gives num_bytes (its sizing: optimal_num_bytes)
            mid = (low + high) // 2
            if optimal_num_bytes(mid, fpp) < self.num_bytes:
                low = mid + 1
            else:
                high = mid
        if optimal_num_bytes(low, fpp) != self.num_bytes:
            raise ValueError(f"no ndv gives {self.num_bytes}-byte filters at fpp {fpp}")
        return low


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
        cap = WRITER_DEFAULT_MAX_BYTES if self.bloom_filter_max_bytes is None else self.bloom_filter_max_bytes
        for column, spec in blooms.items():
            if spec.num_bytes is not None and spec.num_bytes > cap:
                raise ValueError(f"bloom_filters[{column!r}]: num_bytes {spec.num_bytes} exceeds "
                                 f"parquet.bloom.filter.max.bytes ({cap}), which would cap it: raise "
                                 "bloom_filter_max_bytes")
        if isinstance(self.kms, KeyListKmsConfig):
            known = set(self.kms.master_key_ids)
            for key_id in {self.footer_key, *column_keys}:
                if key_id not in known:
                    raise KeyNotFoundError(f"master key id {key_id!r} is not in the key list")
        elif isinstance(self.kms, TransitKmsConfig):
            for key_id in {self.footer_key, *column_keys}:
                if not _ID.fullmatch(key_id):
                    raise ValueError(f"master key id {key_id!r} is not a valid transit key name")
        elif isinstance(self.kms, AwsKmsConfig):
            for key_id in {self.footer_key, *column_keys}:
                if not _AWS_ID.fullmatch(key_id):
                    raise ValueError(f"master key id {key_id!r} is not an AWS KMS key id or alias name "
                                     "(alias/...; an ARN's ':' cannot go in parquet.encryption.column.keys)")
        else:
            raise TypeError("kms must be a KeyListKmsConfig, a TransitKmsConfig or an AwsKmsConfig")

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
            ndv = spec.expected_ndv()
            if ndv is not None:
                conf[f"parquet.bloom.filter.expected.ndv#{column}"] = str(ndv)
            if spec.fpp is not None:
                conf[f"parquet.bloom.filter.fpp#{column}"] = repr(spec.fpp)
            if spec.fixed:
                # every chunk gets a filter (parquet-java skips all-dictionary chunks), and
                # without an ndv no candidate size is picked per row group (adaptive sizing has
                # no per-column switch; an ndv takes precedence over it)
                conf[f"parquet.enable.dictionary#{column}"] = "false"
                if ndv is None:
                    conf["parquet.bloom.filter.adaptive.enabled"] = "false"
        if self.bloom_filter_max_bytes is not None:
            conf["parquet.bloom.filter.max.bytes"] = str(self.bloom_filter_max_bytes)
        return conf

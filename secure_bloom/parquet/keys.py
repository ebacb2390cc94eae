"""What a caller brings to open encrypted Parquet files: one small frozen value, :class:`KeyAccess`.

Keys are never given directly to the file layer; they are resolved from each file's
``key_metadata`` (SPEC_NOTES 7) through :class:`secure_bloom.kms.KeyUnwrapper`:

* key tools material, internal or in the ``_KEY_MATERIAL_FOR_<file>.json`` sidecar -> ``kms``;
* a plain key id (``kf``, ``kc1``) -> ``explicit`` (:class:`~secure_bloom.kms.ExplicitKeys`);
* ``aad_prefix`` for files written with a withheld AAD prefix (``supply_aad_prefix``).

One ``KeyAccess`` is meant to be shared by the reader, ``attach``, the CLI and the audit: its
unwrapper caches KEKs across files (``cache_lifetime_s``). ``repr`` shows which sources are set,
never key bytes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..kms import ExplicitKeys, FileKeyUnwrapper, KeyUnwrapper

__all__ = ["KeyAccess", "NO_KEYS"]


@dataclass(frozen=True)
class KeyAccess:
    """The caller's key sources for encrypted files.

    ``kms``: a :class:`~secure_bloom.kms.KmsClient` or a factory
    ``(kms_instance_id, kms_instance_url) -> KmsClient``; ``explicit``: key ids -> keys
    (an :class:`ExplicitKeys` or a mapping); ``aad_prefix``: bytes or str (UTF-8).

    ``allow_unverified_footer``: with keys given, a signed plaintext footer whose signing key
    cannot be obtained is an error by default (otherwise whoever rewrites the footer's signing key
    id could switch verification off). Set True to read such files anyway, with
    ``footer.signature_verified`` left None: only plaintext columns and columns whose own keys are
    available can then be read, and the footer itself is unauthenticated.
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
                self.kms, explicit_keys=self.explicit, cache_lifetime_s=self.cache_lifetime_s))

    @property
    def has_keys(self) -> bool:
        """True if any key source (KMS or explicit keys) is set."""
        return self.kms is not None or self.explicit is not None

    def retriever(self, data_file: str | os.PathLike[str]) -> FileKeyUnwrapper:
        """``key_metadata -> key`` for the file at ``data_file`` (finds its sidecar beside it)."""
        return self.unwrapper.for_file(data_file)

    def __repr__(self) -> str:
        return (f"KeyAccess(kms={type(self.kms).__name__ if self.kms is not None else None}, "
                f"explicit={self.explicit!r}, aad_prefix={'set' if self.aad_prefix is not None else None}"
                + (", allow_unverified_footer=True)" if self.allow_unverified_footer else ")"))


#: No keys at all: plaintext files, and plaintext columns of plaintext-footer files.
NO_KEYS = KeyAccess()

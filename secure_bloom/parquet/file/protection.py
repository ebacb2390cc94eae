"""How the files a result was read from protected it, and how to write it out as protected.

A query decrypts what it reads; written to a file as it is, that file would hold emails and SSNs
in plaintext. :func:`source_protection` records, from the open readers of the files read, which
result columns were encrypted and under which KMS master keys (never keys: master key ids from
the key metadata), and whether a footer was encrypted. :meth:`SourceProtection.encryption` is
then pyarrow's ``EncryptionConfiguration`` that writes the result under the same master keys
(fresh data keys wrapped by the same KMS): every column encrypted in a source file is encrypted
under its master key, the footer under the source's footer master key (encrypted if any source
footer was). When that cannot be done faithfully (bare explicit key ids, which no KMS wraps; one
column or the footers under different master keys in different files) it raises
:class:`~secure_bloom.errors.ConfigurationError` saying why, and nothing is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import ConfigurationError
from ...types import ChunkEncryption, FooterMode
from .reader import ParquetBloomReader

__all__ = ["SourceProtection", "source_protection"]

#: The master key "id" recorded for a key that is a bare key id (no KMS wraps it).
_EXPLICIT = "<explicit key id>"


@dataclass(frozen=True)
class SourceProtection:
    """``columns``: top-level column name -> the master key ids its encrypted leaves had (leaf
    path -> ids in ``leaves``); ``footer_keys``: master key ids of the footer keys of files with
    encrypted or signed footers; ``encrypted_footer``: whether any footer was encrypted. A bare
    explicit key id (or key metadata that names no master key) is recorded as
    ``"<explicit key id>"``. Made by :func:`source_protection`.

    Parameters
    ----------
    columns : mapping of str to frozenset of str
        Top-level column -> master key ids of its encrypted leaves.
    leaves : mapping of str to frozenset of str
        Leaf path -> master key ids.
    footer_keys : frozenset of str
        Master key ids of the encrypted or signed footers.
    encrypted_footer : bool
        Whether any footer was encrypted (not only signed).
    """

    columns: Mapping[str, frozenset[str]]
    leaves: Mapping[str, frozenset[str]]
    footer_keys: frozenset[str]
    encrypted_footer: bool

    def encrypted_columns(self, names: Sequence[str]) -> list[str]:
        """Those of ``names`` (a result's columns) encrypted in some file read.

        Parameters
        ----------
        names : sequence of str
            Top-level column names.

        Returns
        -------
        list of str
            In the order of ``names``.

        Raises
        ------
        None
            A lookup in memory.
        """
        return [n for n in names if n in self.columns]

    def encryption(self, names: Sequence[str]) -> Any:
        """pyarrow's ``EncryptionConfiguration`` writing a result of columns ``names`` under the
        same master keys (fresh data keys; double wrapping, internal key material): each
        encrypted leaf under its master key, the footer under the sources' footer master key,
        encrypted if any source footer was (else signed plaintext); uniform encryption when no
        column of ``names`` was encrypted.

        Parameters
        ----------
        names : sequence of str
            The result's top-level columns.

        Returns
        -------
        pyarrow.parquet.encryption.EncryptionConfiguration
            For ``write_table(encryption=...)``.

        Raises
        ------
        secure_bloom.errors.ConfigurationError
            It cannot be done faithfully: a key was a bare explicit key id (no KMS wraps it), a
            leaf was encrypted under different master keys in different files, or the files had
            different footer keys or none.
        """
        import pyarrow.parquet.encryption as pe

        wanted = set(self.encrypted_columns(names))
        leaves = {leaf: ids for leaf, ids in self.leaves.items() if leaf.split(".")[0] in wanted}
        every = set().union(self.footer_keys, *leaves.values())
        if _EXPLICIT in every:
            raise ConfigurationError("the files read are encrypted with explicit keys (bare key ids), which no KMS "
                                     "wraps: the result cannot be encrypted under the same keys")
        mixed = sorted(leaf for leaf, ids in leaves.items() if len(ids) > 1)
        if mixed:
            raise ConfigurationError(
                f"column {mixed[0]!r} is encrypted under different master keys in the files read "
                f"({', '.join(sorted(leaves[mixed[0]]))}): the result cannot be written under one of them")
        if len(self.footer_keys) != 1:
            raise ConfigurationError(
                "the files read have different footer keys (" + ", ".join(sorted(self.footer_keys)) + ")"
                if self.footer_keys else "the files read have no footer key to encrypt the result's footer with")
        column_keys: dict[str, list[str]] = {}
        for leaf, ids in sorted(leaves.items()):
            column_keys.setdefault(next(iter(ids)), []).append(leaf)
        footer = next(iter(self.footer_keys))
        keys: dict[str, Any] = {"column_keys": column_keys} if column_keys else {"uniform_encryption": True}
        return pe.EncryptionConfiguration(footer_key=footer, plaintext_footer=not self.encrypted_footer,
                                          double_wrapping=True, internal_key_material=True, **keys)

    def describe(self, names: Sequence[str]) -> str:
        """``footer: K; email, ssn: K2`` for messages (master key ids only).

        Parameters
        ----------
        names : sequence of str
            The columns to name (those of a result).

        Returns
        -------
        str
            The footer keys, then the encrypted columns of ``names`` by master key.

        Raises
        ------
        None
            Formats what is recorded.
        """
        wanted = set(self.encrypted_columns(names))
        by_key: dict[str, list[str]] = {}
        for column in sorted(wanted):
            for key_id in sorted(self.columns[column]):
                by_key.setdefault(key_id, []).append(column)
        parts = [f"footer: {', '.join(sorted(self.footer_keys))}"] if self.footer_keys else []
        return "; ".join(parts + [f"{', '.join(cols)}: {key_id}" for key_id, cols in by_key.items()])


def source_protection(readers: Iterable[ParquetBloomReader]) -> SourceProtection:
    """The protection of the files behind ``readers`` (open; their footers already read):
    master key ids from each chunk's key metadata, never keys.

    Parameters
    ----------
    readers : iterable of ParquetBloomReader
        The readers of the files a result was read from.

    Returns
    -------
    SourceProtection
        What the result's columns and footers were protected with.

    Raises
    ------
    None
        Master key ids the key metadata or sidecar cannot tell are recorded as explicit.
    """
    columns: dict[str, set[str]] = {}
    leaves: dict[str, set[str]] = {}
    footer_keys: set[str] = set()
    encrypted_footer = False
    for reader in readers:
        if reader.footer.encrypted:
            footer_keys.add(reader.master_key_id() or _EXPLICIT)
            encrypted_footer = encrypted_footer or reader.footer.mode is FooterMode.ENCRYPTED
        for chunk in reader.column_chunks():
            if chunk.encryption is ChunkEncryption.PLAINTEXT:
                continue
            key_id = reader.master_key_id(chunk) or _EXPLICIT
            leaves.setdefault(chunk.column.path, set()).add(key_id)
            columns.setdefault(chunk.column.path_in_schema[0], set()).add(key_id)
    return SourceProtection({k: frozenset(v) for k, v in columns.items()},
                            {k: frozenset(v) for k, v in leaves.items()}, frozenset(footer_keys), encrypted_footer)

"""Column-chunk values of a Parquet file, read by pyarrow, decrypted through our KMS clients.

pyarrow decrypts files written with key tools (internal or external key material; SPEC_NOTES 7)
through ``pyarrow.parquet.encryption.CryptoFactory``; our :class:`~secure_bloom.kms.KmsClient`
(or factory) is bridged into it with :class:`~secure_bloom.kms.PyArrowKmsClient`. Files that path
cannot open (key_metadata that is a plain key id, a withheld AAD prefix) are decrypted with the
footer key we resolve, through ``pyarrow.parquet.encryption.create_decryption_properties``: pyarrow
takes one key that way, so columns with keys of their own raise
:class:`UnsupportedParquetFeatureError` before anything is read.

Values come back as the leaf column's Arrow array, in the form :meth:`SplitBlockBloomFilter.insert
<secure_bloom.filter.SplitBlockBloomFilter.insert>` hashes exactly as Parquet writers do: the normalisation is
:mod:`secure_bloom.values.arrow` (INT96 from a nanosecond and a second read, exact for every date).
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow as pa

from ...errors import MissingKeyError, UnsupportedParquetFeatureError
from ...kms.client import is_kms_client
from ...kms.material import KeyMetadata
from ...types import ChunkEncryption, FooterMode, PhysicalType
from ...values.arrow import int96_from_reads, leaf_array, stored_form
from .crypto_context import EncryptionParams
from .footer import Footer, key_id_of
from .keys import NO_KEYS, KeyAccess
from .reader import ParquetBloomReader
from .schema import ColumnInfo
from .sources import locate

__all__ = ["ArrowChunkSource", "decryption_properties", "direct_decryption_properties", "open_arrow_file",
           "kms_path_opens", "pyarrow_kms_opens", "shared_format_opens"]


def _prefix_withheld(params: EncryptionParams | None) -> bool:
    return params is not None and params.supply_aad_prefix and params.aad_prefix_stored is None


def kms_path_opens(params: EncryptionParams | None, footer_key_metadata: bytes | None,
                   key_metadata: Iterable[bytes | None]) -> bool:
    """True if pyarrow's KMS path (``CryptoFactory``) can decrypt an encrypted file of these
    encryption parameters with this footer key and these column keys: every key's metadata is
    key tools material, and the AAD prefix is not withheld (pyarrow's ``DecryptionConfiguration``
    cannot carry one).

    Parameters
    ----------
    params : EncryptionParams or None
        The footer's encryption parameters.
    footer_key_metadata : bytes or None
        The footer key's metadata.
    key_metadata : iterable of bytes or None
        The column keys' metadata.

    Returns
    -------
    bool
        Whether ``CryptoFactory`` can decrypt the file.

    Raises
    ------
    None
        Nothing of its own.
    """
    if _prefix_withheld(params):
        return False
    return all(kmd is None or KeyMetadata.looks_like_key_tools(bytes(kmd))
               for kmd in [footer_key_metadata, *key_metadata])


def pyarrow_kms_opens(footer: Footer, key_metadata: Iterable[bytes | None]) -> bool:
    """:func:`kms_path_opens` for an open file's footer and these column keys.

    Parameters
    ----------
    footer : Footer
        The file's footer, its keys resolved.
    key_metadata : iterable of bytes or None
        The column keys' metadata.

    Returns
    -------
    bool
        Whether ``CryptoFactory`` can decrypt the file.

    Raises
    ------
    None
        Nothing of its own.
    """
    return kms_path_opens(footer.params, footer.footer_key_metadata, key_metadata)


def shared_format_opens(reader: ParquetBloomReader) -> bool:
    """True if pyarrow's one format for a dataset opens this file: a plaintext footer, or
    :func:`pyarrow_kms_opens` for the footer key and every column key of its own (a fact of the
    file version, whatever columns are read).

    Parameters
    ----------
    reader : ParquetBloomReader
        An open reader of the file.

    Returns
    -------
    bool
        Whether a dataset's one format opens it.

    Raises
    ------
    None
        Nothing of its own.
    """
    footer = reader.footer
    if footer.mode is FooterMode.PLAINTEXT:
        return True
    return pyarrow_kms_opens(footer, [c.key_metadata for c in reader.column_chunks()
                                      if c.encryption is ChunkEncryption.COLUMN_KEY])


def direct_decryption_properties(footer: Footer, key_metadata: Sequence[bytes | None], keys: KeyAccess, where: str,
                                 columns: Sequence[str] = ()) -> Any:
    """pyarrow ``FileDecryptionProperties`` holding the file's footer key itself
    (``pyarrow.parquet.encryption.create_decryption_properties``, with the AAD prefix when the
    file withholds it), for files pyarrow's KMS path cannot open (explicit key ids, a withheld
    AAD prefix). The footer key must already be resolved (``footer.footer_key``, by our key
    access).

    pyarrow takes only one key this way: it decrypts the footer and the columns encrypted with
    the footer key, not columns with keys of their own. ``key_metadata`` are the column keys the
    read needs (of ``columns``): any makes it :class:`UnsupportedParquetFeatureError`, raised
    before pyarrow reads anything. Never logs or shows the key.

    Parameters
    ----------
    footer : Footer
        The file's footer, its keys resolved.
    key_metadata : iterable of bytes or None
        The column keys' metadata pyarrow will need.
    keys : KeyAccess
        The caller's keys.
    where : str
        The file, as messages name it.
    columns : sequence of str
        The columns to be read.

    Returns
    -------
    pyarrow.parquet.FileDecryptionProperties
        Holding the footer key.

    Raises
    ------
    secure_bloom.errors.MissingKeyError
        A key cannot be obtained.
    secure_bloom.errors.UnsupportedParquetFeatureError
        Column keys of their own where only the footer key can be given to pyarrow.
    """
    import pyarrow.parquet.encryption as pe

    if key_metadata:
        ids = ", ".join(sorted({repr(key_id_of(kmd)) for kmd in key_metadata}))
        named = (f"column{'s' if len(columns) > 1 else ''} {', '.join(map(repr, columns))} need"
                 if columns else "columns need")
        explicit = any(kmd is None or not KeyMetadata.looks_like_key_tools(bytes(kmd))
                       for kmd in [footer.footer_key_metadata, *key_metadata])
        why = ("the file's keys are explicit key ids, not KMS key material" if explicit else
               "the file withholds its AAD prefix, which pyarrow's KMS decryption (DecryptionConfiguration) "
               "cannot be given")
        raise UnsupportedParquetFeatureError(
            f"{where}: {named} keys of their own ({ids}), which pyarrow cannot be given: {why}, and pyarrow's "
            "one other decryption from Python (pyarrow.parquet.encryption.create_decryption_properties) takes "
            "a single key, the footer key (uniform encryption). What works: reading only the columns under the "
            "footer key and the plaintext ones (leave the others out of the columns and the filter); probing and "
            "pruning, which read every column; or rewriting the file with KMS key material with a reader that "
            "takes per-column explicit keys (parquet-java, Spark)")
    if footer.footer_key is None:
        raise MissingKeyError(f"{where}: the footer key {key_id_of(footer.footer_key_metadata)!r} is needed to "
                              "read the file's values")
    prefix = keys.aad_prefix if _prefix_withheld(footer.params) else None
    return pe.create_decryption_properties(footer.footer_key, aad_prefix=prefix)


def decryption_properties(footer: Footer, key_metadata: Iterable[bytes | None], keys: KeyAccess,
                          key_material_file: str | os.PathLike[str]) -> Any:
    """pyarrow ``FileDecryptionProperties`` for a file, or None for a plaintext file.

    ``key_metadata`` are the column keys pyarrow will need besides the footer key. Files with
    key tools material are decrypted through ``keys.kms`` (pyarrow's ``CryptoFactory``); others
    (explicit key ids, a withheld AAD prefix) with the footer key itself
    (:func:`direct_decryption_properties`: uniform encryption only).

    Parameters
    ----------
    footer : Footer
        The file's footer, its keys resolved.
    key_metadata : iterable of bytes or None
        The column keys' metadata pyarrow will need.
    keys : KeyAccess
        The caller's keys.
    key_material_file : str or os.PathLike
        The file whose sidecar holds external key material.

    Returns
    -------
    pyarrow.parquet.FileDecryptionProperties or None
        None for a plaintext file.

    Raises
    ------
    secure_bloom.errors.MissingKeyError
        A key cannot be obtained.
    secure_bloom.errors.UnsupportedParquetFeatureError
        Column keys of their own where only the footer key can be given to pyarrow.
    """
    if footer.mode is FooterMode.PLAINTEXT:
        return None
    needed = list(key_metadata)
    if not pyarrow_kms_opens(footer, needed):
        return direct_decryption_properties(footer, needed, keys,
                                            os.fspath(key_material_file))
    if keys.kms is None:
        raise MissingKeyError("reading an encrypted file's values needs a KMS client (KeyAccess(kms=...))")
    import pyarrow.parquet.encryption as pe

    from ...kms.pyarrow_adapter import PyArrowKmsClient, takes_connection_config

    kms = keys.kms

    def factory(config: Any) -> Any:
        if is_kms_client(kms):
            return PyArrowKmsClient(kms)
        if takes_connection_config(kms):
            return PyArrowKmsClient(kms(config))
        return PyArrowKmsClient(kms(config.kms_instance_id or "DEFAULT", config.kms_instance_url or "DEFAULT"))

    crypto_factory = pe.CryptoFactory(factory)
    config = pe.DecryptionConfiguration(cache_lifetime=dt.timedelta(seconds=keys.cache_lifetime_s))
    return crypto_factory.file_decryption_properties(pe.KmsConnectionConfig(), config,
                                                     parquet_file_path=os.fspath(key_material_file))


def open_arrow_file(path: str | os.PathLike[str], keys: KeyAccess | None = None) -> Any:
    """A ``pyarrow.parquet.ParquetFile`` that reads every value of ``path``, plaintext or
    encrypted (decrypted through ``keys.kms``, as :func:`decryption_properties`).

    Every key an encrypted file needs (its footer key, each column's) is resolved first, so that
    one ``keys`` cannot give raises :class:`MissingKeyError` naming it (a wrong one
    :class:`~secure_bloom.errors.AuthenticationError`) before pyarrow reads anything.

    Parameters
    ----------
    path : str or os.PathLike
        The Parquet file.
    keys : KeyAccess, optional
        The caller's keys.

    Returns
    -------
    pyarrow.parquet.ParquetFile
        The open file.

    Raises
    ------
    secure_bloom.errors.MissingKeyError
        A key the file needs cannot be obtained.
    secure_bloom.errors.AuthenticationError
        A key is wrong.
    OSError
        The file cannot be read.
    pyarrow.ArrowException
        pyarrow refuses the footer our reader accepted (a feature it does not read).
    """
    import pyarrow.parquet as pq

    keys = keys if keys is not None else NO_KEYS
    with ParquetBloomReader(path, keys) as reader:
        footer = reader.footer
        column_keys: list[bytes | None] = []
        for chunk in reader.column_chunks():
            if chunk.encrypted:
                reader.key_for(chunk)  # MissingKeyError naming the column and its key
            if chunk.encryption is ChunkEncryption.COLUMN_KEY:
                column_keys.append(chunk.key_metadata)
        if footer.encrypted and footer.footer_key is None:
            raise MissingKeyError(f"{reader.path}: the footer key {key_id_of(footer.footer_key_metadata)!r} is "
                                  "needed to read the file's values")
        decryption = decryption_properties(footer, column_keys, keys, path)
    filesystem, located = locate(path)  # a URI: the filesystem with the timeouts in force
    return pq.ParquetFile(located, filesystem=filesystem, decryption_properties=decryption)


class ArrowChunkSource:
    """Reads one leaf column's values of one row group at a time with pyarrow, in the stored
    form the filters hash (what ``attach`` and the audit insert and compare).

    Parameters
    ----------
    path : str or os.PathLike
        A local Parquet file.
    decryption : pyarrow.parquet.FileDecryptionProperties or None
        How pyarrow decrypts it (:func:`decryption_properties`); None for a plaintext file.

    Raises
    ------
    OSError
        The file cannot be opened.
    pyarrow.ArrowException
        pyarrow cannot read or decrypt its footer (a damaged file, a wrong or missing key).
    """

    def __init__(self, path: str | os.PathLike[str], decryption: Any) -> None:
        import pyarrow.parquet as pq

        self._path = os.fspath(path)
        self._decryption = decryption
        self._file = pq.ParquetFile(self._path, decryption_properties=decryption, coerce_int96_timestamp_unit="ns")
        self._seconds: Any = None  # the same file with INT96 read as seconds (opened on demand)

    def _read(self, file: Any, row_group: int, column: ColumnInfo) -> pa.Array:
        table = file.read_row_group(row_group, columns=[column.path_in_schema[0]], use_threads=False)
        return leaf_array(table.column(0), column)

    def values(self, row_group: int, column: ColumnInfo) -> pa.Array:
        """The values of ``column`` in ``row_group``, as the column stores them (INT96 as read twice,
        in nanoseconds and seconds, :func:`~secure_bloom.values.arrow.int96_from_reads`).

        Parameters
        ----------
        row_group : int
            The row group's position.
        column : ColumnInfo
            The leaf column.

        Returns
        -------
        pyarrow.Array
            One value per row (nulls included), in the column's stored form.

        Raises
        ------
        secure_bloom.errors.UnsupportedParquetFeatureError
            A nesting or type the reader does not take apart.
        pyarrow.ArrowException
            pyarrow cannot read or decrypt the chunk (``ArrowIOError`` is an ``OSError``).
        """
        nanos = self._read(self._file, row_group, column)
        return self._stored(row_group, column, nanos)

    def row_group_values(self, row_group: int, columns: Sequence[ColumnInfo]) -> list[pa.Array]:
        """:meth:`values` of several leaves of one row group, read in one call so that pyarrow
        decrypts and decodes the column chunks in parallel (its own threads). A top-level name
        the file holds twice (a dotted name beside a struct) is read leaf by leaf instead.

        Parameters
        ----------
        row_group : int
            The row group's position.
        columns : sequence of ColumnInfo
            The leaf columns.

        Returns
        -------
        list of pyarrow.Array
            One array per column, in order.

        Raises
        ------
        secure_bloom.errors.UnsupportedParquetFeatureError, pyarrow.ArrowException
            As :meth:`values`, for any of the chunks.
        """
        tops = list(dict.fromkeys(c.path_in_schema[0] for c in columns))
        schema = self._file.schema_arrow
        if any(len(schema.get_all_field_indices(name)) != 1 for name in tops):
            return [self.values(row_group, c) for c in columns]
        table = self._file.read_row_group(row_group, columns=tops, use_threads=True)
        return [self._stored(row_group, c, leaf_array(table.column(c.path_in_schema[0]), c)) for c in columns]

    def _stored(self, row_group: int, column: ColumnInfo, nanos: pa.Array) -> pa.Array:
        if column.physical_type is PhysicalType.INT96:
            return int96_from_reads(nanos, self.int96_seconds(row_group, column))
        return stored_form(nanos, column)

    def int96_seconds(self, row_group: int, column: ColumnInfo) -> pa.Array:
        """An INT96 column as pyarrow reads it in seconds (exact for every stored day); the file
        is opened a second time for that on first use.

        Parameters
        ----------
        row_group : int
            The row group's position.
        column : ColumnInfo
            An INT96 leaf of this file.

        Returns
        -------
        pyarrow.Array
            Second-resolution timestamps, one per row.

        Raises
        ------
        secure_bloom.errors.UnsupportedParquetFeatureError
            A nesting the reader does not take apart.
        pyarrow.ArrowException
            pyarrow cannot open, read or decrypt it.
        """
        import pyarrow.parquet as pq

        if self._seconds is None:
            self._seconds = pq.ParquetFile(self._path, decryption_properties=self._decryption,
                                           coerce_int96_timestamp_unit="s")
        return self._read(self._seconds, row_group, column)

    def close(self) -> None:
        """Close the file (and its second, seconds-resolution opening if made).

        Raises
        ------
        None
            Closes pyarrow's handles; closing twice is fine.
        """
        self._file.close()
        if self._seconds is not None:
            self._seconds.close()

    def __enter__(self) -> ArrowChunkSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

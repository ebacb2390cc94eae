"""``inspect``: the reader's description with every filter's storage checked (SPEC_NOTES 4-5).

Spec: BloomFilter.md "File Format", Encryption.md "Encrypted module serialization". Each filter's
bytes are classified from their framing alone (:func:`~.filter_io.read_filter_storage`) and, where
the key is available, read and authenticated through the reader; a leaked or damaged filter is
reported, not raised.
"""

from __future__ import annotations

from typing import Any

from ...errors import SecureBloomError
from ...types import FilterForm
from .filter_io import read_filter_storage
from .reader import ParquetBloomReader

__all__ = ["describe_with_storage"]


def describe_with_storage(reader: ParquetBloomReader) -> dict[str, Any]:
    """``reader.describe()`` with every filter's storage checked, for ``inspect``.

    Each chunk with a filter gains ``filter_storage`` (``plaintext`` / ``encrypted`` /
    ``unreadable`` / ``garbage``), ``filter_verified`` (read and, if encrypted, authenticated
    with the key) and ``filter_problem``: ``PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN``, an
    encrypted filter on a plaintext column, what is wrong with the framing, or the read error.
    ``filter_num_bytes`` comes from the framing when the filter cannot be read. Unlike
    ``describe()``, a leaked or damaged filter is reported, not raised.

    Parameters
    ----------
    reader : ParquetBloomReader
        An open reader.

    Returns
    -------
    dict
        The ``inspect`` document (:meth:`ParquetBloomReader.describe`, without header sizes)
        with the storage fields added to every chunk.

    Raises
    ------
    secure_bloom.errors.KeyManagementError
        The KMS fails for another reason than a missing key (a missing key is reported).
    OSError
        The file cannot be read.
    """
    desc: dict[str, Any] = reader.describe(with_sizes=False)
    data_end = reader.tail.footer_offset
    raw = reader.file
    for rg in desc["row_groups"]:
        for chunk in rg["chunks"]:
            chunk.update(filter_storage=None, filter_verified=None, filter_problem=None)
            if not chunk.get("has_bloom_filter"):
                continue
            storage = read_filter_storage(raw, chunk["bloom_filter_offset"], chunk["bloom_filter_length"],
                                          data_end)
            chunk["filter_storage"] = storage.form
            chunk["filter_num_bytes"] = storage.num_bytes
            chunk["filter_verified"] = False
            if storage.form is FilterForm.GARBAGE:
                chunk["filter_problem"] = storage.detail
                continue
            if storage.form is FilterForm.PLAINTEXT and chunk["encrypted"]:
                chunk["filter_problem"] = "PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN"
                continue
            if storage.form is FilterForm.ENCRYPTED and not chunk["encrypted"]:
                chunk["filter_problem"] = "an encrypted filter on a plaintext column"
                continue
            if not chunk.get("key_available", True):
                continue
            try:
                bf = reader.bloom_filter(rg["row_group"], chunk["column_ordinal"])
            except (SecureBloomError, ValueError) as e:
                chunk["filter_storage"] = "unreadable"
                chunk["filter_problem"] = " ".join(str(e).split())
                continue
            chunk["filter_verified"] = True
            chunk["filter_num_bytes"] = bf.num_bytes if bf is not None else None
    return desc

"""External key material: the sidecar file ``_KEY_MATERIAL_FOR_<data file name>.json`` beside a
Parquet file (SPEC_NOTES 7), read and written as parquet-java's ``HadoopFSKeyMaterialStore`` does.

The file is one JSON object mapping each key reference to its key material *as a JSON string*::

    {"footerKey": "{\\"masterKeyID\\":\\"kf\\", ...}", "columnKey0": "{...}", "columnKey1": "{...}"}

Material in the sidecar has no ``internalStorage`` field. Writes are atomic
(:class:`~secure_bloom.fileio.AtomicOutput`), so a reader sees the old or the new sidecar, never a mix.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO

from ..errors import KeyNotFoundError, MalformedKeyMaterialError
from ..fileio import AtomicOutput, fsync_dir, open_regular_file
from ._java_json import java_hashmap_json
from .material import FOOTER_KEY_REFERENCE, KeyMaterial, column_key_reference

__all__ = ["KeyMaterialStore", "sidecar_path", "SIDECAR_PREFIX", "SIDECAR_SUFFIX"]

SIDECAR_PREFIX = "_KEY_MATERIAL_FOR_"
SIDECAR_SUFFIX = ".json"
_COLUMN_REFERENCE = re.compile(r"columnKey(\d+)\Z")
_MAX_SIDECAR_BYTES = 64 << 20


def sidecar_path(data_file: str | os.PathLike[str]) -> Path:
    """``<dir>/_KEY_MATERIAL_FOR_<name>.json`` for the Parquet file ``<dir>/<name>``.

    Parameters
    ----------
    data_file : str or os.PathLike
        The Parquet file.

    Returns
    -------
    pathlib.Path
        Where its external key material is (parquet-java's name).

    Raises
    ------
    None
        Nothing of its own.

    Examples
    --------
    >>> from secure_bloom.kms import sidecar_path
    >>> sidecar_path("lake/part-0.parquet").as_posix()
    'lake/_KEY_MATERIAL_FOR_part-0.parquet.json'
    """
    path = Path(data_file)
    return path.with_name(f"{SIDECAR_PREFIX}{path.name}{SIDECAR_SUFFIX}")


class KeyMaterialStore:
    """The key material of one file's external storage: reference -> :class:`KeyMaterial`.

    Writers :meth:`add` material (the footer's under ``footerKey``, columns' under
    ``columnKey0``, ``columnKey1``, ... in order) and :meth:`save`; readers :meth:`load` and
    :meth:`get`. Holds wrapped keys only, never key bytes.

    Parameters
    ----------
    materials : mapping of str to KeyMaterial, optional
        Material by reference.
    """

    def __init__(self, materials: Mapping[str, KeyMaterial] | None = None) -> None:
        self._materials: dict[str, KeyMaterial] = {}
        self._next_column = 0
        #: Where the store was read from or saved to (for messages): a path or an object's URI.
        self.source: str | None = None
        for reference, material in (materials or {}).items():
            self._put(reference, material)

    def _put(self, reference: str, material: KeyMaterial) -> None:
        if reference in self._materials:
            raise ValueError(f"key reference {reference!r} is already in the store")
        self._materials[reference] = replace(material, internal_storage=False)
        match = _COLUMN_REFERENCE.match(reference)
        if match:
            self._next_column = max(self._next_column, int(match.group(1)) + 1)

    def add(self, material: KeyMaterial) -> str:
        """Store ``material``; returns its reference (``footerKey`` or the next ``columnKey<N>``).

        Parameters
        ----------
        material : KeyMaterial
            The material to store.

        Returns
        -------
        str
            Its reference.

        Raises
        ------
        ValueError
            Its reference is already in the store (a second footer material).
        """
        if material.is_footer_key:
            reference = FOOTER_KEY_REFERENCE
        else:
            reference = column_key_reference(self._next_column)
        self._put(reference, material)
        return reference

    def get(self, reference: str) -> KeyMaterial:
        """The material stored under ``reference``.

        Parameters
        ----------
        reference : str
            ``footerKey`` or ``columnKey<N>``.

        Returns
        -------
        KeyMaterial
            The material.

        Raises
        ------
        secure_bloom.errors.KeyNotFoundError
            No material under that reference.
        """
        try:
            return self._materials[reference]
        except KeyError:
            where = f" in {self.source}" if self.source else ""
            raise KeyNotFoundError(f"no key material under reference {reference!r}{where}") from None

    @property
    def footer_material(self) -> KeyMaterial | None:
        """The footer key's material, or None if the store has none."""
        return self._materials.get(FOOTER_KEY_REFERENCE)

    def references(self) -> tuple[str, ...]:
        """The references, in insertion order.

        Returns
        -------
        tuple of str
            The references.

        Raises
        ------
        None
            Nothing of its own.
        """
        return tuple(self._materials)

    def items(self) -> Iterator[tuple[str, KeyMaterial]]:
        """(reference, material) pairs, in insertion order.

        Returns
        -------
        iterator of (str, KeyMaterial)
            The pairs.

        Raises
        ------
        None
            Nothing of its own.
        """
        return iter(list(self._materials.items()))

    def __len__(self) -> int:
        return len(self._materials)

    def to_json(self) -> str:
        """The sidecar text, byte for byte as parquet-java writes it.

        Returns
        -------
        str
            The sidecar's text.

        Raises
        ------
        None
            Nothing of its own.
        """
        return java_hashmap_json([(ref, m.to_json()) for ref, m in self._materials.items()])

    @classmethod
    def from_json(cls, text: str | bytes, source: str | os.PathLike[str] | None = None) -> KeyMaterialStore:
        """Parse a sidecar's text.

        Parameters
        ----------
        text : str or bytes
            The sidecar's text.
        source : str or os.PathLike, optional
            What messages call it.

        Returns
        -------
        KeyMaterialStore
            The store.

        Raises
        ------
        secure_bloom.errors.MalformedKeyMaterialError
            The JSON does not parse, or a field is missing or of the wrong type (named).
        """
        what = f"key material file {source}" if source is not None else "key material file"
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError, an int over 4300 digits
            raise MalformedKeyMaterialError(f"{what} is not valid JSON") from None
        if not isinstance(obj, dict) or not all(isinstance(v, str) for v in obj.values()):
            raise MalformedKeyMaterialError(f"{what} must map key references to material JSON strings")
        materials = {}
        for reference, material_json in obj.items():
            try:
                materials[reference] = KeyMaterial.from_json(material_json)
            except MalformedKeyMaterialError as e:
                raise MalformedKeyMaterialError(f"{what}, reference {reference!r}: {e}") from None
        store = cls(materials)
        store.source = os.fspath(source) if source is not None else None
        return store

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> KeyMaterialStore:
        """Read a sidecar file. A missing file raises :class:`KeyNotFoundError`.

        Parameters
        ----------
        path : str or os.PathLike
            The sidecar file.

        Returns
        -------
        KeyMaterialStore
            The store.

        Raises
        ------
        secure_bloom.errors.KeyNotFoundError
            No such file.
        secure_bloom.errors.MalformedKeyMaterialError
            The JSON does not parse, or a field is missing or of the wrong type (named).
        """
        try:
            with open_regular_file(path) as f:
                return cls.read_from(f, os.fspath(path))
        except FileNotFoundError:
            raise KeyNotFoundError(f"external key material file {os.fspath(path)} does not exist") from None

    @classmethod
    def read_from(cls, file: BinaryIO, source: str) -> KeyMaterialStore:
        """Read a sidecar from an open binary file (e.g. an object on a ``pyarrow.fs``
        filesystem), named ``source`` in messages; at most 64 MiB are read.

        Parameters
        ----------
        file : binary file
            Open for reading.
        source : str
            What messages call it.

        Returns
        -------
        KeyMaterialStore
            The store.

        Raises
        ------
        secure_bloom.errors.MalformedKeyMaterialError
            The JSON does not parse, or a field is missing or of the wrong type (named).
        """
        data = file.read(_MAX_SIDECAR_BYTES + 1)
        if len(data) > _MAX_SIDECAR_BYTES:
            raise MalformedKeyMaterialError(f"key material file {source} is over {_MAX_SIDECAR_BYTES} bytes")
        return cls.from_json(data, source=source)

    @classmethod
    def for_data_file(cls, data_file: str | os.PathLike[str]) -> KeyMaterialStore:
        """Load the sidecar of the Parquet file ``data_file``.

        Parameters
        ----------
        data_file : str or os.PathLike
            The Parquet file.

        Returns
        -------
        KeyMaterialStore
            The store.

        Raises
        ------
        secure_bloom.errors.KeyNotFoundError
            The file has no sidecar.
        secure_bloom.errors.MalformedKeyMaterialError
            The JSON does not parse, or a field is missing or of the wrong type (named).
        """
        return cls.load(sidecar_path(data_file))

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the sidecar atomically; an existing file keeps its permission bits.

        Parameters
        ----------
        path : str or os.PathLike
            Where to write it.

        Returns
        -------
        pathlib.Path
            ``path``.

        Raises
        ------
        OSError
            The file cannot be written.
        """
        target = Path(path)
        data = self.to_json().encode("utf-8")
        out = AtomicOutput(target.with_name(f".{target.name}.{os.urandom(6).hex()}.tmp"), 0o666)
        try:
            out.write(data)
            if target.exists():
                out.chmod(target.stat().st_mode & 0o7777)
            out.sync()
            out.publish(target, replace=True)
        except BaseException:
            out.discard()
            raise
        fsync_dir(target.parent)
        self.source = os.fspath(target)
        return target

    def __repr__(self) -> str:
        return f"KeyMaterialStore(references={list(self._materials)!r}, source={self.source})"


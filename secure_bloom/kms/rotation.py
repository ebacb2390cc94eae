"""Master key rotation for external key material (SPEC_NOTES 7; parquet-java
``KeyToolkit.rotateMasterKeys``).

After a master key is rotated in the KMS (e.g. transit ``rotate``), new wraps use the new
version while old wrapped keys still unwrap. :func:`rewrap_external_key_material` re-wraps every
data key in a sidecar with the current master key version: it unwraps each DEK, wraps it again
(fresh KEKs when double wrapping), checks that every new material unwraps to the same DEK, and
only then replaces the sidecar atomically. The data file, and its key_metadata references, stay
untouched; the DEKs are unchanged.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import KeyManagementError
from .client import KmsClient
from .material import KeyMaterial
from .sidecar import KeyMaterialStore
from .unwrapper import KeyUnwrapper
from .wrapper import FileKeyWrapper

__all__ = ["rewrap_external_key_material"]


def rewrap_external_key_material(sidecar: str | os.PathLike[str], kms: KmsClient, *,
                                 unwrap_kms: KmsClient | None = None,
                                 double_wrapping: bool | None = None) -> int:
    """Re-wrap the key material in the sidecar file ``sidecar`` under the current master key
    versions; returns the number of keys re-wrapped.

    ``kms`` wraps (and, unless ``unwrap_kms`` is given, also unwraps the old material).
    ``double_wrapping`` defaults to what each material used. Master key ids and the footer's KMS
    instance are kept. Nothing is written unless every key re-wrapped and verified.
    """
    path = Path(sidecar)
    old = KeyMaterialStore.load(path)
    footer = old.footer_material
    reader = KeyUnwrapper(unwrap_kms or kms, cache_lifetime_s=0)
    verifier = KeyUnwrapper(kms, cache_lifetime_s=0)
    writers: dict[bool, FileKeyWrapper] = {}
    new: dict[str, KeyMaterial] = {}
    for reference, material in old.items():
        double = material.double_wrapping if double_wrapping is None else double_wrapping
        if double not in writers:
            writers[double] = FileKeyWrapper(
                kms, kms_instance_id=(footer.kms_instance_id if footer else None) or "DEFAULT",
                kms_instance_url=(footer.kms_instance_url if footer else None) or "DEFAULT",
                double_wrapping=double)
        dek = reader.unwrap_material(material, footer_material=footer)
        rewrapped = writers[double].key_material(dek, material.master_key_id,
                                                 is_footer_key=material.is_footer_key, internal_storage=False)
        if verifier.unwrap_material(rewrapped, footer_material=footer) != dek:
            raise KeyManagementError(
                f"re-wrapped key {reference!r} (master key {material.master_key_id!r}) does not unwrap "
                f"to the same data key; {path} left unchanged")
        new[reference] = rewrapped
    KeyMaterialStore(new).save(path)
    return len(new)

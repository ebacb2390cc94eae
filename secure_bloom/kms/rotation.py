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
    versions (after a transit key rotation), without touching the data file.

    Master key ids and the footer's KMS instance are kept. Nothing is written unless every key
    re-wrapped and verified; the sidecar is replaced atomically.

    Parameters
    ----------
    sidecar : str or os.PathLike
        The ``_KEY_MATERIAL_FOR_<file>.json`` file.
    kms : KmsClient
        Wraps the keys (and, unless ``unwrap_kms`` is given, also unwraps the old material).
    unwrap_kms : KmsClient, optional
        Unwraps the old material.
    double_wrapping : bool, optional
        Wrap data keys under a KEK (default: what each material used).

    Returns
    -------
    int
        The number of keys re-wrapped.

    Raises
    ------
    secure_bloom.errors.MalformedKeyMaterialError
        The sidecar does not parse.
    secure_bloom.errors.KeyManagementError
        The KMS cannot unwrap or wrap a key.
    OSError
        The sidecar cannot be read or replaced.
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

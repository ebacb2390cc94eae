"""Loading the optional compiled extensions (``native_kernels``, ``native_thrift``).

Each has a pure-Python twin and an environment switch (``auto``, ``native`` or the fallback's
name): ``auto`` loads the extension where it is built, ``native`` demands it, the fallback's name
never loads it. One rule for both, so ``secure-bloom --version`` and the tests read them alike.

An extension that ``auto`` cannot load (pip built the package without a C compiler or without
the Python headers: the build skips an optional extension with a message only ``pip -v`` shows)
is reported once per process with an :class:`ExtensionFallbackWarning`, naming the fallback in
use and the switch that silences it (choosing the fallback by name).
"""

from __future__ import annotations

import importlib
import os
import warnings
from types import ModuleType

__all__ = ["ExtensionFallbackWarning", "load_extension"]


class ExtensionFallbackWarning(RuntimeWarning):
    """A compiled extension is not built or cannot be loaded, so its slower pure-Python twin runs.

    Filter it with ``warnings.filterwarnings("ignore", category=ExtensionFallbackWarning)`` or
    choose the fallback explicitly (``SECURE_BLOOM_KERNEL=numpy``, ``SECURE_BLOOM_THRIFT=python``)."""


#: What to do about an extension that is not built (the default remedy a warning names).
REBUILD = "Reinstall with a C compiler and the Python headers (pip install -v shows the build)"


def load_extension(name: str, env_var: str, fallback: str, *, fallback_text: str = "",
                   remedy: str = REBUILD) -> tuple[ModuleType | None, str | None]:
    """``secure_bloom.<name>`` or None, and the reason it is not used (None when loaded).

    Under ``auto``, an extension that cannot be loaded warns (:class:`ExtensionFallbackWarning`,
    naming ``fallback_text``, the twin that runs instead, and ``remedy``); callers load each extension once, at
    import, so the warning comes once per process. Raises ValueError for a switch value other than
    ``auto``, ``native`` and ``fallback``, and ImportError when ``native`` is demanded and the
    extension cannot be loaded."""
    choice = os.environ.get(env_var, "auto").strip().lower() or "auto"
    if choice not in ("auto", "native", fallback):
        raise ValueError(f"{env_var} must be auto, native or {fallback}, got {choice!r}")
    if choice == fallback:
        return None, f"{env_var}={fallback}"
    module = f"secure_bloom.{name}"
    try:
        return importlib.import_module(module), None
    except ImportError as e:
        if choice == "native":
            raise ImportError(f"{env_var}=native but {module} cannot be loaded: {e}") from e
        reason = f"{module} is not built or cannot be loaded ({e})"
        warnings.warn(f"{reason}: using {fallback_text or 'the ' + fallback + ' fallback'}, which is slower. "
                      f"{remedy}, or set {env_var}={fallback} to choose the fallback and silence this warning",
                      ExtensionFallbackWarning, stacklevel=3)
        return None, reason

"""Loading the optional compiled extensions (``native_kernels``, ``native_thrift``).

Each has a pure-Python twin and an environment switch (``auto``, ``native`` or the fallback's
name): ``auto`` loads the extension where it is built, ``native`` demands it, the fallback's name
never loads it. One rule for both, so ``secure-bloom --version`` and the tests read them alike.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["load_extension"]


def load_extension(name: str, env_var: str, fallback: str) -> tuple[ModuleType | None, str | None]:
    """``secure_bloom.<name>`` or None, and the reason it is not used (None when loaded).

    Raises ValueError for a switch value other than ``auto``, ``native`` and ``fallback``, and
    ImportError when ``native`` is demanded and the extension cannot be loaded."""
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
        return None, f"{module} is not built or cannot be loaded ({e})"

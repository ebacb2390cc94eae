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

__all__ = ["ExtensionFallbackWarning", "load_extension", "WHEEL_PYTHONS", "WHEEL_PLATFORM", "wheel_tags",
           "installed_build"]

#: The CPython versions a wheel is built and tested for (scripts/wheel builds and smoke-tests each,
#: scripts/pythons runs the unit tests on each); pyproject.toml's classifiers and README's Install
#: section promise exactly these (tests/unit/test_packaging.py holds them equal).
WHEEL_PYTHONS = ("3.10", "3.11", "3.12", "3.13")
#: The one platform those wheels are built for (auditwheel's tag; the glibc 2.17 floor). No aarch64
#: wheel: nothing here builds or tests one, so it is not promised.
WHEEL_PLATFORM = "manylinux_2_17_x86_64"


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
    import, so the warning comes once per process.

    Parameters
    ----------
    name : str
        The extension's module name under ``secure_bloom`` (``native_kernels``...).
    env_var : str
        The switch (``SECURE_BLOOM_KERNEL``...): ``auto`` (default, also when empty), ``native``
        or ``fallback``.
    fallback : str
        The switch value that chooses the twin (``numpy``, ``python``).
    fallback_text : str, default ""
        How the warning names the twin; default ``the <fallback> fallback``.
    remedy : str, default REBUILD
        What the warning tells the user to do.

    Returns
    -------
    (module or None, str or None)
        The loaded module and None; or None and the reason (the switch, or the import error).

    Raises
    ------
    ValueError
        The switch is not ``auto``, ``native`` or ``fallback``.
    ImportError
        The switch says ``native`` and the extension cannot be loaded.
    """
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


def wheel_tags() -> tuple[str, ...]:
    """The wheel tags shipped, one per :data:`WHEEL_PYTHONS`.

    Returns
    -------
    tuple of str
        ``("cp310-cp310-manylinux_2_17_x86_64", ...)``: interpreter, ABI and platform tag.

    Raises
    ------
    None
        Built from the two constants.
    """

    return tuple(f"cp{v.replace('.', '')}-cp{v.replace('.', '')}-{WHEEL_PLATFORM}" for v in WHEEL_PYTHONS)


def installed_build() -> str:
    """How this copy of secure_bloom was installed, for ``secure-bloom --version``.

    Read from the installed distribution's ``WHEEL`` file when it describes the imported package
    (not a source tree on ``sys.path`` beside an installed copy).

    Returns
    -------
    str
        ``"wheel cp313-cp313-manylinux2014_x86_64.manylinux_2_17_x86_64"`` for one of the wheels
        shipped (its tags as in its file name), ``"built from source (cp313-cp313-linux_x86_64)"``
        for a wheel pip built on this machine (from the sdist or a checkout), ``"source tree"``
        where the package is imported from a directory no installed distribution owns.

    Raises
    ------
    Nothing: unreadable metadata counts as a source tree.
    """
    from importlib import metadata
    from pathlib import Path

    here = Path(__file__).resolve().parent / "__init__.py"
    try:
        dist = metadata.distribution("secure-bloom")
        owned = Path(str(dist.locate_file("secure_bloom/__init__.py"))).resolve() == here
        wheel = (dist.read_text("WHEEL") or "") if owned else ""
    except (metadata.PackageNotFoundError, OSError, ValueError):
        wheel = ""
    tags = [line.split(":", 1)[1].strip() for line in wheel.splitlines() if line.startswith("Tag:")]
    if not tags:
        return "source tree"
    heads = {t.rsplit("-", 1)[0] for t in tags}  # one interpreter-ABI pair, platforms sorted: the file name's tag
    tag = f"{min(heads)}-{'.'.join(sorted(t.rsplit('-', 1)[1] for t in tags))}" if len(heads) == 1 else ".".join(tags)
    shipped = any(t in wheel_tags() for t in tags)
    return f"wheel {tag}" if shipped else f"built from source ({tag})"

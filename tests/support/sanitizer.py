"""An AddressSanitizer + UndefinedBehaviorSanitizer build of the three C extensions, and Python runs
against it (tests/robustness/test_sanitizers.py).

:func:`build_sanitized_package` compiles ``secure_bloom/_native/kernels.c``, ``thrift_compact.c``
and ``gcm.c`` (which dlopen()s OpenSSL's libcrypto at import, as the release build does) with
``-fsanitize=address,undefined -fno-omit-frame-pointer -g`` (plus the release ``-O3``) into a copy of
the INSTALLED package in a temporary folder, so a Python started with that folder first on
its path imports ``secure_bloom`` with the sanitized extensions (the pure-Python modules are the
installed ones). :func:`sanitizer_env` is the environment for such a process: the ASan runtime
preloaded (Python itself is not instrumented), leak detection off (the interpreter keeps its
objects at exit), UBSan stopping at its first report with a stack trace, every Python allocation
through malloc (PYTHONMALLOC=malloc: a use after free of a PyMem block is seen too), every extension
demanded (SECURE_BLOOM_KERNEL/THRIFT/PRUNE=native). :func:`sanitizer_reports` finds reports in output.

The compiler is ``$CC`` (default gcc) and the runtime ``$CC -print-file-name=libasan.so``; where
either is missing the test fails, unless SECURE_BLOOM_ALLOW_SKIP names ``sanitizer``
(support.components).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sysconfig
from pathlib import Path

from support.components import missing
from support.paths import REPO_DIR

SANITIZE_FLAGS = ("-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-g")
_OPT_FLAGS = ("-O3",)  # as setup.py builds the wheel; the kernels report their flags in info()
EXTENSIONS = {"native_kernels": REPO_DIR / "secure_bloom" / "_native" / "kernels.c",
              "native_thrift": REPO_DIR / "secure_bloom" / "_native" / "thrift_compact.c",
              "native_gcm": REPO_DIR / "secure_bloom" / "_native" / "gcm.c"}
#: Libraries an extension links (as setup.py says: -ldl for dlopen on glibc < 2.34; empty from 2.34).
LIBRARIES = {"native_gcm": ("dl",)}
#: Lines that only a sanitizer prints.
REPORT_MARKERS = ("ERROR: AddressSanitizer", "runtime error:", "SUMMARY: UndefinedBehaviorSanitizer",
                  "ERROR: LeakSanitizer")


def compiler() -> str:
    """The C compiler to use: ``$CC`` or gcc (a missing one fails, see module docstring)."""
    cc = shlex.split(os.environ.get("CC", "gcc") or "gcc")[0]
    path = shutil.which(cc)
    if path is None:
        missing("sanitizer", f"C compiler {cc!r} not found (set CC or install gcc)")
    return path


def asan_runtime(cc: str) -> Path:
    """The ASan shared runtime of ``cc`` (what LD_PRELOAD must load before Python)."""
    out = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True, text=True, timeout=60)
    path = Path(out.stdout.strip())
    if out.returncode != 0 or not path.is_absolute() or not path.exists():
        missing("sanitizer", f"{cc} has no AddressSanitizer runtime (libasan.so; install libasan)")
    return path.resolve()


def compile_extension(cc: str, source: Path, module: str, dest_dir: Path, libraries: tuple[str, ...] = ()) -> Path:
    """``source`` built as extension module ``module`` in ``dest_dir`` with the sanitizers."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    target = dest_dir / f"{module}{suffix}"
    flags = (*_OPT_FLAGS, *SANITIZE_FLAGS)
    cmd = [cc, *flags, "-fPIC", "-shared", f"-I{sysconfig.get_paths()['include']}",
           f'-DSB_BUILD_FLAGS="{" ".join(flags)}"', str(source), "-o", str(target), *(f"-l{lib}" for lib in libraries)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise AssertionError(f"sanitized build of {source.name} failed:\n{result.stderr[-4000:]}")
    return target


def build_sanitized_package(root: Path) -> Path:
    """A copy of the installed ``secure_bloom`` under ``root`` with every extension rebuilt with the
    sanitizers; returns ``root`` (put it first on the path: cwd of ``python -m``, or PYTHONPATH)."""
    import secure_bloom

    cc = compiler()
    asan_runtime(cc)
    installed = Path(secure_bloom.__file__).resolve().parent
    package = root / "secure_bloom"
    shutil.copytree(installed, package, ignore=shutil.ignore_patterns("__pycache__", "native_*.so", "native_*.pyd"))
    for module, source in EXTENSIONS.items():
        compile_extension(cc, source, module, package, LIBRARIES.get(module, ()))
    return root


def sanitizer_env(root: Path, **extra: str) -> dict[str, str]:
    """The environment of a Python process that imports the sanitized build under ``root``."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_PRELOAD")}
    env.update({
        "LD_PRELOAD": str(asan_runtime(compiler())),
        "ASAN_OPTIONS": "detect_leaks=0",
        "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
        "PYTHONMALLOC": "malloc",
        "PYTHONPATH": str(root),
        "SECURE_BLOOM_KERNEL": "native",
        "SECURE_BLOOM_THRIFT": "native",
        "SECURE_BLOOM_GCM": "native",
        "PYTHONFAULTHANDLER": "1",
    })
    env.update(extra)
    return env


def sanitizer_reports(output: str) -> list[str]:
    """The lines of ``output`` that are sanitizer reports (empty: none)."""
    return [line for line in output.splitlines() if any(marker in line for marker in REPORT_MARKERS)]

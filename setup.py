"""Build script for the optional C kernels; every other setting lives in pyproject.toml.

``secure_bloom.native_kernels`` (secure_bloom/_native/kernels.c), ``secure_bloom.native_thrift``
(secure_bloom/_native/thrift_compact.c) and ``secure_bloom.native_gcm`` (secure_bloom/_native/gcm.c,
which loads OpenSSL's libcrypto at run time with dlopen: no OpenSSL headers or -lcrypto at build time,
no libcrypto in the wheel) are *optional* extensions: where they cannot be compiled (no C compiler,
no Python headers; a big-endian host for the kernels) ``pip install .`` still succeeds, :mod:`secure_bloom.kernels` uses its numpy fallback,
:mod:`secure_bloom.thrift_codec` its Python (thriftpy2) decoder and :mod:`secure_bloom.crypto.gcm`
cryptography's AES-GCM, one module per call, for the lookups' batches of modules.

Flags: -O3 and nothing machine-specific (no -march=native): a wheel must run on any x86-64 machine
(the wheels built and tested are x86-64 only; elsewhere the sdist builds with the same flags,
untested). The AVX2 block kernels are compiled per function (``target("avx2")``) and chosen
at import with ``__builtin_cpu_supports``.
"""

from __future__ import annotations

import sys

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

_UNIX_FLAGS = ["-O3"]
#: The split-block Bloom filter primitive (salt, block index, block insert/check, header parser)
#: both C files include: a change to it rebuilds them.
_SBBF_HEADER = "secure_bloom/_native/sbbf.h"
_GIL_HEADER = "secure_bloom/_native/gil.h"
_MSVC_FLAGS = ["/O2"]


class _BuildExt(build_ext):
    """Pick the optimisation flags for the compiler in use and record them in the module."""

    def build_extensions(self) -> None:
        flags = _MSVC_FLAGS if self.compiler.compiler_type == "msvc" else _UNIX_FLAGS
        for ext in self.extensions:
            ext.extra_compile_args = [*flags, *ext.extra_compile_args]
            ext.define_macros = [*ext.define_macros, ("SB_BUILD_FLAGS", '"' + " ".join(flags) + '"')]
        super().build_extensions()


setup(
    # secure_bloom/_idl is specs/ (the Thrift IDL ships inside the package, as with hatch before).
    packages=[*find_packages(include=["secure_bloom", "secure_bloom.*"]), "secure_bloom._idl"],
    package_dir={"secure_bloom._idl": "specs"},
    ext_modules=[
        Extension("secure_bloom.native_kernels", sources=["secure_bloom/_native/kernels.c"], depends=[_SBBF_HEADER, _GIL_HEADER],
                  optional=True),
        Extension("secure_bloom.native_thrift", sources=["secure_bloom/_native/thrift_compact.c"], optional=True),
        # OpenSSL's libcrypto (EVP AES-GCM) is dlopen()ed at import, not linked: the wheel keeps the
        # glibc floor of the other extensions (manylinux_2_17) and uses the system's libcrypto.
        # -ldl: dlopen lives in libdl before glibc 2.34 (in libc since; the stub libdl is harmless).
        Extension("secure_bloom.native_gcm", sources=["secure_bloom/_native/gcm.c"], depends=[_SBBF_HEADER, _GIL_HEADER],
                  libraries=[] if sys.platform in ("win32", "darwin") else ["dl"], optional=True),
    ],
    cmdclass={"build_ext": _BuildExt},
)

"""The policy for a real component the suite needs but cannot find: fail, unless the user opts out.

A missing OpenBao binary (marker ``kms``), Java / pyspark (marker ``interop``), the compiled C
kernels (secure_bloom.native_kernels and secure_bloom.native_thrift; marker ``native``), moto's
server (markers ``s3`` and ``aws_kms``), g++ for the Arrow C++ harness (marker ``arrow_cpp``) or gcc with its ASan
runtime for the sanitized build (marker ``sanitizer``) FAILS the run, so a green run means those
tests ran. To run without one, either deselect its marker (``scripts/test -m "not kms"``) or name
it in ``SECURE_BLOOM_ALLOW_SKIP`` (comma-separated: ``openbao``, ``spark``, ``native``, ``moto``,
``arrow_cpp``, ``sanitizer``): the tests then skip, and ``-ra`` prints why in the summary.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

ALLOW_SKIP_ENV = "SECURE_BLOOM_ALLOW_SKIP"
_MARKERS = {"openbao": "kms", "spark": "interop", "native": "native", "moto": "s3 and not aws_kms",
            "arrow_cpp": "arrow_cpp",
            "sanitizer": "sanitizer"}


def missing(component: str, why: str) -> NoReturn:
    """Fail the test (or skip it, if ``SECURE_BLOOM_ALLOW_SKIP`` names ``component``) for ``why``."""
    allowed = {name.strip() for name in os.environ.get(ALLOW_SKIP_ENV, "").split(",")}
    if component in allowed:
        pytest.skip(f"{component} missing ({why}); skipped because {ALLOW_SKIP_ENV} names it")
    pytest.fail(f"{component} missing: {why}. Install it (scripts/setup), deselect its tests with "
                f"-m 'not {_MARKERS[component]}', or set {ALLOW_SKIP_ENV}={component} to skip them", pytrace=False)

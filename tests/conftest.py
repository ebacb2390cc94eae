"""Shared pytest fixtures, and the fixture modules of tests/support registered as plugins (so no
test imports a fixture by hand).

Layout: tests/unit (one module per subject, no JVM or server), tests/interop (Spark, parquet-java
through PySpark, a real OpenBao), tests/robustness (malformed input, tampering, crashes, faults,
concurrency, secret hygiene), tests/support (helpers), tests/data (vectors with provenance).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from support.paths import REPO_DIR

pytest_plugins = ["support.blackhole", "support.openbao_server", "support.s3_server", "support.aws_kms_server",
                  "support.thrift_backends"]

if TYPE_CHECKING:
    from support.spark_bloom_data import SparkBloomFiles


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local SparkSession (2 cores, UI off, WARN) with the secure_bloom jar on its class path.

    Shared by the whole run: a test that sets an encryption policy must clear it again
    (``with secure_bloom.spark.session.applied_policy(spark, policy): ...``).
    """
    from support.components import missing
    from secure_bloom.errors import JavaNotFoundError

    try:
        from secure_bloom.spark.session import local_spark

        session = local_spark("secure-bloom-tests", cores=2)
    except (ImportError, JavaNotFoundError) as e:
        missing("spark", f"{type(e).__name__}: {e}")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_bloom_files(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> SparkBloomFiles:
    """Spark-written Parquet files with encrypted Bloom filters (GCM / CTR, encrypted / plaintext
    footer), the key list that opens them and the values expected in each row group; see
    tests/support/spark_bloom_data.py."""
    from support.spark_bloom_data import write_spark_bloom_files

    return write_spark_bloom_files(spark, tmp_path_factory.mktemp("spark-bloom-files"))


@pytest.fixture(scope="session")
def dev_key_list_file() -> Any:
    """keys/dev-key-list.txt of this checkout (development keys: never for production)."""

    path = REPO_DIR / "keys" / "dev-key-list.txt"
    assert path.is_file(), path
    return path


# Hypothesis profiles: every property test scales its example count by the loaded profile
# (tests/support/profiles.py: examples(n)). CI and a plain `pytest` use "ci" (bounded example counts);
# the default tier (scripts/test-fast) "dev", a quarter of them; HYPOTHESIS_PROFILE=fuzz runs 20x more;
# "sanitizer" a quarter, for the instrumented run; "pythons" a fifth, for scripts/pythons.
def _register_hypothesis_profiles() -> None:
    import os

    from hypothesis import HealthCheck, settings

    quiet = [HealthCheck.too_slow, HealthCheck.data_too_large]
    settings.register_profile("ci", max_examples=100, deadline=None, suppress_health_check=quiet,
                              print_blob=True)
    settings.register_profile("dev", max_examples=25, deadline=None, suppress_health_check=quiet,
                              print_blob=True)
    settings.register_profile("fuzz", max_examples=2000, deadline=None, suppress_health_check=quiet,
                              print_blob=True)
    # the kernel and decoder tests in the ASan/UBSan interpreter (tests/robustness/test_sanitizers.py)
    settings.register_profile("sanitizer", max_examples=25, deadline=None, suppress_health_check=quiet,
                              print_blob=True)
    # the unit tier on the Pythons other than CI's first (scripts/pythons): each property again on
    # another interpreter, at a fifth of the depth
    settings.register_profile("pythons", max_examples=20, deadline=None, suppress_health_check=quiet,
                              print_blob=True)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


_register_hypothesis_profiles()

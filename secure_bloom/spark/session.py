"""Spark sessions that write and read encrypted Parquet with Bloom filters through parquet-java.

* :func:`configure_spark` puts the secure_bloom jar (our KMS clients) on the driver and executor
  class paths and sets the policy's non-secret properties as ``spark.hadoop.*``.
* :func:`apply_policy` sets a policy, secrets included, on a running session's Hadoop
  configuration. Spark builds each Parquet write's and read's Hadoop conf from that configuration
  (plus SQL conf and the writer's options), so the change applies to every later write and read.
* :func:`local_spark` is a small local session for tests and demos.

Secrets never go through the builder: PySpark launches the JVM with ``spark-submit --conf k=v``,
which any process listing shows. :func:`apply_policy` sends them over the Py4J socket instead.
Only classic (Py4J) sessions are supported, not Spark Connect.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from secure_bloom.spark.jvm import secure_bloom_jar
from secure_bloom.spark.policy import EncryptionPolicy

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["applied_policy", "apply_policy", "clear_policy", "configure_spark", "local_spark"]

_POLICY_PREFIXES = ("parquet.encryption.", "parquet.bloom.filter.", "parquet.enable.dictionary#", "secure_bloom.kms.")
_POLICY_KEYS = ("parquet.crypto.factory.class",)
_REDACTION = r"(?i)secret|password|token|access[.]?key|key[.]list"
"""Spark's default spark.redaction.regex plus the key list property."""


def _prepend_path(builder: Any, key: str, entry: str) -> None:
    current = builder._options.get(key) if hasattr(builder, "_options") else None
    value = entry if not current else os.pathsep.join([entry, str(current)])
    builder.config(key, value)


def configure_spark(builder: Any, policy: EncryptionPolicy | None = None) -> Any:
    """Add the secure_bloom jar and (optionally) ``policy``'s non-secret properties to a
    ``SparkSession.Builder``; returns the builder.

    The jar goes on spark.driver.extraClassPath and spark.executor.extraClassPath (where
    parquet-java's class loading finds it) and on spark.jars (which ships it to executors of a
    cluster). spark.redaction.regex is widened to hide the key list in logs and the UI.
    The key list / token are not set here: call :func:`apply_policy` once the session exists.

    Parameters
    ----------
    builder : pyspark.sql.SparkSession.Builder
        The builder to configure.
    policy : EncryptionPolicy, optional
        Its non-secret properties become ``spark.hadoop.*`` options.

    Returns
    -------
    pyspark.sql.SparkSession.Builder
        ``builder``.

    Raises
    ------
    secure_bloom.errors.JavaNotFoundError
        No JDK to compile the jar with (the first time; it is cached by content).
    secure_bloom.errors.JvmError
        The jar did not compile.
    """
    jar = str(secure_bloom_jar())
    _prepend_path(builder, "spark.driver.extraClassPath", jar)
    _prepend_path(builder, "spark.executor.extraClassPath", jar)
    existing_jars = builder._options.get("spark.jars") if hasattr(builder, "_options") else None
    builder.config("spark.jars", ",".join(filter(None, [str(existing_jars or ""), jar])))
    builder.config("spark.redaction.regex", _REDACTION)
    if policy is not None:
        for key, value in policy.write_options().items():
            builder.config(f"spark.hadoop.{key}", value)
    return builder


def _hadoop_conf(spark: SparkSession) -> Any:
    return spark.sparkContext._jsc.hadoopConfiguration()


def clear_policy(spark: SparkSession) -> None:
    """Remove every encryption, Bloom filter and KMS property from the session's Hadoop conf and
    drop parquet-java's cached KMS clients and keys, so later writes are plaintext.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        The session.

    Raises
    ------
    AssertionError
        The session has no JVM gateway (stopped).
    """
    conf = _hadoop_conf(spark)
    for prefix in _POLICY_PREFIXES:
        for suffix in list(conf.getPropsWithPrefix(prefix).keySet().toArray()):
            conf.unset(prefix + str(suffix))
    for key in _POLICY_KEYS:
        conf.unset(key)
    _forget_cached_keys(spark)


def _forget_cached_keys(spark: SparkSession) -> None:
    """parquet-java caches KMS clients (per token and KMS instance) and unwrapped keys for ten
    minutes; a new key list under the same default token would otherwise be ignored."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None, "the SparkContext has no JVM gateway"
    jvm.org.apache.parquet.crypto.keytools.KeyToolkit.removeCacheEntriesForAllTokens()


def apply_policy(spark: SparkSession, policy: EncryptionPolicy | None) -> None:
    """Make ``policy`` the session's: later Parquet writes encrypt and write Bloom filters as it
    says, and reads decrypt with its KMS. Replaces any earlier policy; None clears it.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        The session.
    policy : EncryptionPolicy or None
        The policy (secrets included: the key list or token go into the Hadoop conf, which
        ``spark.redaction.regex`` hides).

    Raises
    ------
    AssertionError
        The session has no JVM gateway (stopped).
    """
    clear_policy(spark)
    if policy is None:
        return
    conf = _hadoop_conf(spark)
    for key, value in policy.hadoop_conf().items():
        conf.set(key, value)


@contextmanager
def applied_policy(spark: SparkSession, policy: EncryptionPolicy | None) -> Iterator[SparkSession]:
    """``with applied_policy(spark, policy):`` - the policy holds inside the block and is cleared
    on exit (sessions shared between tests stay plaintext by default).

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        The session.
    policy : EncryptionPolicy or None
        The policy for the block.

    Yields
    ------
    pyspark.sql.SparkSession
        ``spark``.

    Raises
    ------
    AssertionError
        The session has no JVM gateway (stopped).
    """
    apply_policy(spark, policy)
    try:
        yield spark
    finally:
        clear_policy(spark)


def local_spark(app_name: str = "secure-bloom", cores: int = 2,
                policy: EncryptionPolicy | None = None) -> SparkSession:
    """A local SparkSession with the secure_bloom jar: ``cores`` threads, UI off, shuffle
    partitions = cores, 1 GiB driver heap, loopback only, UTC session time zone, log level WARN.
    ``policy`` (secrets included) is applied after start-up.

    getOrCreate semantics: if a session is already running in this process it is reused (and its
    class path cannot change).

    Parameters
    ----------
    app_name : str, default "secure-bloom"
        The application name.
    cores : int, default 2
        ``local[cores]``.
    policy : EncryptionPolicy, optional
        Applied after start-up (:func:`apply_policy`).

    Returns
    -------
    pyspark.sql.SparkSession
        The running session.

    Raises
    ------
    secure_bloom.errors.JavaNotFoundError
        No Java 17+ found.
    ImportError
        pyspark is not installed (``pip install 'secure-bloom[spark]'``).
    """
    from pyspark.sql import SparkSession

    # Python workers must run this interpreter (whose environment has secure_bloom, numpy and
    # pyarrow); PySpark otherwise starts whatever "python3" is first on PATH. PySpark reads only
    # the environment variable for this, when the context starts.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(cores))
        .config("spark.default.parallelism", str(cores))
        .config("spark.driver.memory", "1g")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -Dlog4j2.level=WARN")
    )
    spark: SparkSession = configure_spark(builder).getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    apply_policy(spark, policy)
    return spark


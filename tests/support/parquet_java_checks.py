"""The parquet-java checks only the test suite runs, and their Java harnesses (``tests/support/java``).

They compile into a jar of their own (:func:`checks_jar`), built on first use against the
reference-harness jar that ships in the package (``Cli`` plumbing, :mod:`benchmarks.parquet_java`)
and the production jar; nothing here is in the wheel.

* :func:`bloom_verify` - parquet-java reads every stored value of each chunk from the data pages,
  hashes it with its own hash and looks it up in the chunk's filter (``BloomVerify`` main).
* :func:`kms_wrap` / :func:`kms_unwrap` - one wrapKey / unwrapKey call of a JVM KmsClient
  (``KmsTool`` main); unwrap reports only the key's length and SHA-256.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from secure_bloom.spark.jvm import compiled_jar, run_json
from benchmarks.parquet_java import harness_jars

__all__ = ["bloom_verify", "checks_jar", "kms_unwrap", "kms_wrap"]

_PKG = "io.securebloom."
_SOURCES = Path(__file__).parent / "java"


def checks_jar(cache_dir: Path | None = None) -> Path:
    """The test-only harness jar (BloomVerify, KmsTool), cached by content like the others."""
    return compiled_jar(_SOURCES, cache_dir=cache_dir, extra_classpath=harness_jars())


def _run_json(main: str, args: Sequence[str], conf: Mapping[str, str] | None, timeout: float,
              **kwargs: Any) -> dict[str, Any]:
    return run_json(_PKG + main, args, conf, timeout, jars=[checks_jar(), *harness_jars()], **kwargs)


def bloom_verify(
    path: str | Path,
    hadoop_conf: Mapping[str, str] | None = None,
    columns: Iterable[str] = (),
    *,
    list_values: bool = False,
    timeout: float = 300.0,
) -> dict[str, Any]:
    """parquet-java checks ``path``'s Bloom filters against the values it reads from the pages.

    ``result["columns"][column]["row_groups"][g]`` has ``has_bloom_filter``, ``num_values``,
    ``num_distinct``, ``missing`` (distinct stored values parquet-java's findHash does not find) and
    ``missing_values`` (hex of their plain encoding); with ``list_values`` also ``values`` (every
    distinct stored value, hex of the plain encoding). ``columns`` empty: every non-boolean leaf.
    See ``BloomVerify.java``. Raises JvmError if parquet-java fails.
    """
    args = [str(path)]
    for column in columns:
        args += ["--column", column]
    if list_values:
        args.append("--list-values")
    return _run_json("BloomVerify", args, dict(hadoop_conf or {}), timeout)


def _client_class(client: str) -> str:
    return client if "." in client else _PKG + client


def kms_wrap(client: str, master_key_id: str, key: bytes, hadoop_conf: Mapping[str, str],
             timeout: float = 60.0) -> str:
    """``client.wrapKey(key, master_key_id)`` on the JVM (client: a class name, short names are
    io.securebloom's). The key travels on stdin."""
    conf = dict(hadoop_conf)
    conf["secure_bloom.kmstool.key"] = base64.b64encode(key).decode()
    out = _run_json("KmsTool", ["wrap", "--client", _client_class(client),
                                "--master-key-id", master_key_id], conf, timeout)
    return str(out["wrapped"])


def kms_unwrap(client: str, master_key_id: str, wrapped: str, hadoop_conf: Mapping[str, str],
               timeout: float = 60.0) -> tuple[int, str]:
    """``client.unwrapKey(wrapped, master_key_id)`` on the JVM; returns (key length, SHA-256 hex)."""
    out = _run_json("KmsTool", ["unwrap", "--client", _client_class(client),
                                "--master-key-id", master_key_id, "--wrapped", wrapped],
                    dict(hadoop_conf), timeout)
    return int(out["key_length"]), str(out["key_sha256"])

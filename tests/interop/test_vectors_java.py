"""The published conformance vectors (specs/vectors) read by parquet-java itself (BloomProbe,
through PySpark's jars): every expected probe answer of every positive vector, false positives
included, and a refusal for every negative vector."""

from __future__ import annotations

import json
from typing import Any

import pytest

from secure_bloom.errors import JvmError
from benchmarks.parquet_java import ColumnProbe, bloom_probe, format_value
from support.paths import REPO_DIR

pytestmark = pytest.mark.interop

VECTORS = REPO_DIR / "specs" / "vectors"
MANIFEST: dict[str, Any] = json.loads((VECTORS / "manifest.json").read_text())
CONF = {"parquet.crypto.factory.class": "org.apache.parquet.crypto.keytools.PropertiesDrivenCryptoFactory",
        "parquet.encryption.kms.client.class": "io.securebloom.KeyListKmsClient",
        "parquet.encryption.key.list": MANIFEST["keys"]["key_list"]}


def _value(probe: dict[str, Any], value_type: str) -> Any:
    if value_type in ("int32", "int64"):
        return int(probe["value"])
    if value_type in ("float", "double"):
        return float(probe["value"])
    if value_type == "binary-hex":
        return bytes.fromhex(probe["value"])
    return probe["value"]


@pytest.mark.parametrize("entry", MANIFEST["positive"], ids=[e["file"] for e in MANIFEST["positive"]])
def test_positive_vector_with_parquet_java(entry: dict[str, Any]) -> None:
    types = {name: c["value_type"] for name, c in MANIFEST["columns"].items()}
    values = {name: [_value(p, types[name]) for p in probes] for name, probes in MANIFEST["probe_values"].items()}
    result = bloom_probe(VECTORS / entry["file"], [ColumnProbe(name, types[name], tuple(v))  # type: ignore[arg-type]
                                                   for name, v in values.items()], CONF)
    for rg in entry["row_groups"]:
        for column, expected in rg["columns"].items():
            got = result["columns"][column]["row_groups"][rg["row_group"]]["found"]
            answers = "".join("1" if got[format_value(v, types[column])] else "0"  # type: ignore[arg-type]
                              for v in values[column])
            assert answers == expected["expected"], (entry["file"], rg["row_group"], column)


@pytest.mark.parametrize("entry", MANIFEST["negative"], ids=[e["file"] for e in MANIFEST["negative"]])
def test_negative_vector_with_parquet_java(entry: dict[str, Any]) -> None:
    with pytest.raises(JvmError, match=r"\S"):
        bloom_probe(VECTORS / entry["file"], [ColumnProbe(entry["column"], "int32", (1,))], CONF)

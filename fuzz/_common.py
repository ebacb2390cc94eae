"""Shared setup of the atheris harnesses: the parquet-testing keys and the seed directory."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DATA = ROOT / "tests" / "data" / "parquet-testing"
CORPUS = Path(__file__).resolve().parent / "corpus"
#: Test keys of apache/parquet-testing (SPEC_NOTES 10): never for production.
TESTING_KEYS = {"kf": b"0123456789012345", "kc1": b"1234567890123450", "kc2": b"1234567890123451"}
#: aad_file_unique of encrypt_columns_and_footer_bloom_filter.parquet.encrypted (its file AAD).
BLOOM_VECTOR = "encrypt_columns_and_footer_bloom_filter.parquet.encrypted"

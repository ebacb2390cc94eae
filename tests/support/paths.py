"""Where the suite's files are: the repository, tests/, its data and the parquet-testing vectors."""

from __future__ import annotations

from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent.parent
REPO_DIR = TESTS_DIR.parent
DATA_DIR = TESTS_DIR / "data"
VECTORS_DIR = DATA_DIR / "parquet-testing"

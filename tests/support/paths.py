"""Where the suite's files are: the repository, tests/, its data and the parquet-testing vectors."""

from __future__ import annotations

import sys
from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent.parent
REPO_DIR = TESTS_DIR.parent
DATA_DIR = TESTS_DIR / "data"
VECTORS_DIR = DATA_DIR / "parquet-testing"

#: The CLI as a process of the INSTALLED package: ``-I`` keeps the working directory (the source
#: tree, whose extensions are not built in place) off ``sys.path``, as the console script does.
CLI_PROCESS = (sys.executable, "-I", "-m", "secure_bloom.cli")

"""atheris harness: whole-file reading (tail, footer in its three modes, FileCryptoMetaData,
column chunks, the filters they point at), with the parquet-testing keys.

    python fuzz/fuzz_footer.py fuzz/corpus/footer -max_total_time=300

Each input is written as a file and read completely (open, describe, every filter). Only
SecureBloomError may escape.
"""

from __future__ import annotations

import os
import sys
import tempfile

import atheris

with atheris.instrument_imports():
    from _common import TESTING_KEYS
    from secure_bloom.errors import SecureBloomError
    from secure_bloom.kms import KeyListKms
    from secure_bloom.parquet import KeyAccess, ParquetBloomReader

KEYS = KeyAccess(kms=KeyListKms(TESTING_KEYS), explicit=TESTING_KEYS)
_DIR = tempfile.mkdtemp(prefix="fuzz-footer-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
PATH = os.path.join(_DIR, "input.parquet")


def test_one_input(data: bytes) -> None:
    with open(PATH, "wb") as f:
        f.write(data)
    try:
        with ParquetBloomReader(PATH, KEYS) as reader:
            reader.describe()
            for rg in range(reader.num_row_groups):
                for column in reader.columns:
                    try:
                        reader.bloom_filter(rg, column.ordinal)
                    except SecureBloomError:
                        pass
    except SecureBloomError:
        pass


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

"""A process that read from S3 exits 0: no abort in pyarrow's teardown (issue: S3 exit abort).

After ``read_table`` returned, Arrow's pool threads could still hold pyarrow objects that hold
Python objects (our PyFileSystem handlers, the KMS client factory of the format, the file
objects and buffers of counted reads) and drop the last reference while the interpreter was
finalizing: ``terminate called without an active exception``, exit -6, about every other run
(secure_bloom.parquet.file.lifetime). Each case runs a fresh interpreter several times: the old code
aborted in most batches of RUNS.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Any

import pyarrow as pa
import pyarrow.parquet.encryption as pe
import pytest

from secure_bloom.kms import KeyListKms
from secure_bloom.parquet import write_table
from support.paths import CLI_PROCESS, REPO_DIR

pytestmark = pytest.mark.s3

RUNS = 8
KEY_LIST = REPO_DIR / "keys" / "dev-key-list.txt"

SCRIPT = textwrap.dedent("""
    import os, sys
    import pyarrow.fs
    from secure_bloom.kms import KeyListKms
    from secure_bloom.parquet import KeyAccess, read_table

    endpoint, key_list, how = sys.argv[1:4]
    keys = KeyAccess(kms=KeyListKms.from_file(key_list))
    where = [("email", "==", "customer42@example.com")]
    if how == "filesystem":
        s3 = pyarrow.fs.S3FileSystem(endpoint_override=endpoint, scheme="http")
        t = read_table("exit-lake/customers", filesystem=s3, filters=where, keys=keys)
    else:
        t = read_table(f"s3://exit-lake/customers?endpoint_override={endpoint}&scheme=http", filters=where, keys=keys)
    print(t.to_pylist())
""")


@pytest.fixture(scope="module")
def lake(s3: Any) -> str:
    fs = s3.upload_filesystem()
    s3.bucket("exit-lake")
    table = pa.table({"email": [f"customer{i}@example.com" for i in range(5_000)], "amount": range(5_000)})
    write_table(table, "exit-lake/customers/part-0.parquet", filesystem=fs, kms=KeyListKms.from_file(KEY_LIST),
                row_group_size=1_000, bloom_filter_options={"email": True},
                encryption=pe.EncryptionConfiguration(footer_key="footer_key", column_keys={"pii_key": ["email"]}))
    return str(s3.server_endpoint)


def _env() -> dict[str, str]:
    return {**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}


def _runs(argv: list[str], expected_rc: int, expected_out: str) -> None:
    """``argv`` RUNS times: each exits ``expected_rc`` (never -6) after printing ``expected_out``."""
    outcomes = []
    for _ in range(RUNS):
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=_env(), cwd=REPO_DIR.parent)
        outcomes.append((proc.returncode, proc.stderr.strip()[-200:], expected_out in proc.stdout))
    assert [rc for rc, _, _ in outcomes] == [expected_rc] * RUNS, outcomes  # an abort is -6
    assert all(printed for _, _, printed in outcomes), outcomes


@pytest.mark.parametrize("how", ["filesystem", "uri"])
def test_a_script_reading_s3_with_read_table_exits_0_every_time(lake: str, how: str) -> None:
    _runs([sys.executable, "-I", "-c", SCRIPT, lake, str(KEY_LIST), how], 0,
          "[{'email': 'customer42@example.com', 'amount': 42}]")


def test_cli_query_and_audit_of_s3_exit_with_their_codes_every_time(lake: str) -> None:
    uri = f"s3://exit-lake/customers?endpoint_override={lake}&scheme=http"
    _runs([*CLI_PROCESS, "query", uri, "--key-list-file", str(KEY_LIST), "--where", "email = customer42@example.com"],
          0, "customer42@example.com")
    _runs([*CLI_PROCESS, "audit", uri, "--sensitive", "email", "--key-list-file", str(KEY_LIST)], 0,
          "1 compliant")

"""Where files are (secure_bloom.parquet.sources): how URIs are shown, and what a pyarrow
filesystem's bare OSError becomes. The object-store behaviour itself runs against a real S3
server in tests/interop/test_object_store.py."""

from __future__ import annotations

import pyarrow.fs as pafs
import pytest

from secure_bloom.errors import ConfigurationError, StorageUnavailableError
from secure_bloom.parquet.discover import discover
from secure_bloom.parquet.sources import display_source, display_uri, storage_error

URI = "s3://AKID:s3cr3t@lake/events/part-0.parquet?endpoint_override=127.0.0.1:9000&scheme=http"


@pytest.mark.parametrize("text,shown", [
    (URI, "s3://lake/events/part-0.parquet"),
    ("gs://bucket/a/b.parquet?anonymous=true", "gs://bucket/a/b.parquet"),
    ("file:///tmp/a.parquet", "file:///tmp/a.parquet"),
    ("/tmp/a?b.parquet", "/tmp/a?b.parquet"),  # a local name with a '?' is a name
])
def test_display_uri_drops_credentials_and_options(text: str, shown: str) -> None:
    assert display_uri(text) == shown


def test_display_source_names_a_path_on_a_filesystem_by_its_type() -> None:
    fs = pafs.SubTreeFileSystem("/tmp", pafs.LocalFileSystem())
    assert display_source("lake/a.parquet", fs) == "subtree://lake/a.parquet"
    assert display_source("/tmp/a.parquet") == "/tmp/a.parquet"
    assert display_source(URI) == "s3://lake/events/part-0.parquet"


# pyarrow's S3 messages, as it raises them (pyarrow 26, AWS SDK over curl)
REFUSED = ("When getting information for key 'x' in bucket 'lake': AWS Error NETWORK_CONNECTION during HeadObject "
           "operation: curlCode: 7, Could not connect to server; Details: Failed to connect to 127.0.0.1:9 after "
           "0 ms: Could not connect to server")
DENIED = ("When reading information for key 'x' in bucket 'lake': AWS Error ACCESS_DENIED during HeadObject "
          "operation: No response body. (Request ID: 123)")
NO_BUCKET = ("When listing objects under key 'x/' in bucket 'nope': AWS Error NO_SUCH_BUCKET during ListObjectsV2 "
             "operation: The specified bucket does not exist (Request ID: 456)")


def test_storage_error_tells_unreachable_denied_and_missing_bucket_apart() -> None:
    unreachable = storage_error(OSError(REFUSED), "s3://lake/x")
    assert isinstance(unreachable, StorageUnavailableError)
    assert str(unreachable) == ("s3://lake/x: the object store cannot be reached (AWS Error NETWORK_CONNECTION "
                                "during HeadObject operation: curlCode: 7, Could not connect to server)")
    denied = storage_error(OSError(DENIED), "s3://lake/x")
    assert isinstance(denied, PermissionError) and denied.filename == "s3://lake/x"
    assert denied.strerror == "access denied by the object store (AWS Error ACCESS_DENIED during HeadObject " \
                              "operation: No response body.)"
    missing = storage_error(OSError(NO_BUCKET), "s3://nope/x")
    assert isinstance(missing, FileNotFoundError) and missing.strerror == "No such bucket"
    other = OSError("disk on fire")
    assert storage_error(other, "s3://lake/x") is other


def test_a_uri_pyarrow_cannot_open_is_a_usage_error_that_hides_its_options() -> None:
    with pytest.raises(ConfigurationError, match=r"^Unrecognized filesystem type in URI: nosuch://lake/x$"):
        discover(["nosuch://lake/x?secret_key=s3cr3t"])

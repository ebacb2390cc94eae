"""Where files are (secure_bloom.parquet.file.sources): how URIs are shown, and what a pyarrow
filesystem's bare OSError becomes. The object-store behaviour itself runs against a real S3
server in tests/interop/test_object_store.py."""

from __future__ import annotations

import pyarrow.fs as pafs
import pytest

from secure_bloom.errors import ConfigurationError, StorageUnavailableError
from secure_bloom.parquet.audit.discover import discover
from secure_bloom.display import uri_secrets
from secure_bloom.parquet.file.sources import (
    DEFAULT_STORE_TIMEOUTS,
    StoreTimeouts,
    display_source,
    display_uri,
    filesystem_from_uri,
    join_uri,
    storage_error,
    store_timeouts,
)

URI = "s3://AKID:s3cr3t@lake/events/part-0.parquet?endpoint_override=127.0.0.1:9000&scheme=http"


@pytest.mark.parametrize("text,shown", [
    (URI, "s3://lake/events/part-0.parquet"),
    ("gs://bucket/a/b.parquet?anonymous=true", "gs://bucket/a/b.parquet"),
    ("file:///tmp/a.parquet", "file:///tmp/a.parquet"),
    ("/tmp/a?b.parquet", "/tmp/a?b.parquet"),  # a local name with a '?' is a name
    ("s3://lake?access_key=AKID&secret_key=s3cr3t", "s3://lake"),
    ("s3://AKID:s3/cr3t@lake/k.parquet?x=1", "s3://lake/k.parquet"),  # an unescaped '/' in the secret
    ("s3://lake/mail/bob@example.com.parquet", "s3://lake/mail/bob@example.com.parquet"),
    ("hdfs://user:pw@namenode:8020/warehouse#frag", "hdfs://namenode:8020/warehouse"),
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


def test_uri_secrets_are_user_info_and_credential_options_only() -> None:
    assert uri_secrets(URI) == ["AKID:s3cr3t", "s3cr3t"]
    assert uri_secrets("s3://lake/x?secret_key=s3%2Fcr3t&endpoint_override=h:1&scheme=http") == [
        "s3%2Fcr3t", "s3/cr3t"]
    assert uri_secrets("s3://AKID:s3/cr3t@lake/k") == ["AKID:s3/cr3t", "s3/cr3t"]
    assert uri_secrets("/tmp/user:pw@x") == [] and uri_secrets("s3://lake/bob@example.com") == []


def test_the_cli_redactor_knows_the_credentials_of_uri_arguments() -> None:
    from secure_bloom.cli.keys import Redactor

    redact = Redactor.from_invocation(["audit", URI, "--sensitive", "ssn"], {})
    assert redact("pyarrow said: s3cr3t was refused, scheme http") == "pyarrow said: <redacted> was refused, scheme http"


def test_filesystems_built_from_uris_get_the_timeouts_in_force() -> None:
    def options(fs: pafs.S3FileSystem) -> tuple[float, float]:
        built = fs.__reduce__()[1][0]
        return built["connect_timeout"], built["request_timeout"]

    fs, path = filesystem_from_uri(URI)
    assert path == "lake/events/part-0.parquet"
    assert options(fs) == (DEFAULT_STORE_TIMEOUTS.connect_s, DEFAULT_STORE_TIMEOUTS.request_s)
    with store_timeouts(StoreTimeouts(connect_s=0.25, request_s=0.75)):
        assert options(filesystem_from_uri(URI)[0]) == (0.25, 0.75)
    assert options(filesystem_from_uri(URI, StoreTimeouts(request_s=9.0))[0]) == (2.0, 9.0)
    assert StoreTimeouts().within(3.0) == StoreTimeouts(connect_s=1.0, request_s=1.0, attempts=3)
    with pytest.raises(ValueError, match="request_s must be a number of seconds > 0"):
        StoreTimeouts(request_s=0)


def test_join_uri_puts_the_path_before_the_options() -> None:
    assert join_uri("s3://K:S@b/out?endpoint_override=h:1", "d=1/p.parquet") == \
        "s3://K:S@b/out/d=1/p.parquet?endpoint_override=h:1"
    assert join_uri("out", "d=1/p.parquet") == "out/d=1/p.parquet"

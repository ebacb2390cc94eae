"""The one table of error kinds (secure_bloom.errors.ErrorKind): each error class's kind, the
builtins' kinds, and whose it is to fix (the CLI's exit code 2 vs 3)."""

from __future__ import annotations

import json

import pytest

import secure_bloom.errors as errors
from secure_bloom.cli.exits import EXIT_ERROR, EXIT_USAGE, CliError, UsageError, exit_code
from secure_bloom.errors import ErrorKind, error_kind
from secure_bloom.parquet.audit.discover import PROBLEM_KINDS

# (exception, its kind, the CLI exit code): literal, so a change of classification shows here.
KINDS: list[tuple[BaseException, str, int]] = [
    (errors.SecureBloomError("x"), "ERROR", 3),
    (errors.MalformedInputError("x"), "MALFORMED_FILE", 3),
    (errors.MalformedHeaderError("x"), "MALFORMED_FILE", 3),
    (errors.MalformedBitsetError("x"), "MALFORMED_FILE", 3),
    (errors.MalformedModuleError("x"), "MALFORMED_FILE", 3),
    (errors.TruncatedModuleError("x"), "MALFORMED_FILE", 3),
    (errors.MalformedThriftError("x"), "MALFORMED_FILE", 3),
    (errors.MalformedKeyMaterialError("x"), "MALFORMED_KEY_MATERIAL", 2),
    (errors.InvalidValueError("x"), "INVALID_VALUE", 2),
    (errors.AuthenticationError("x"), "AUTHENTICATION_FAILED", 2),
    (errors.ModuleAuthenticationError("BLOOM_FILTER_BITSET"), "AUTHENTICATION_FAILED", 2),
    (errors.FooterSignatureError("x"), "AUTHENTICATION_FAILED", 2),
    (errors.KeyManagementError("x"), "KEY_ERROR", 3),
    (errors.KeyNotFoundError("x"), "KEY_NOT_FOUND", 2),
    (errors.KeyAccessDeniedError("x"), "KEY_ACCESS_DENIED", 3),
    (errors.KeyDisabledError("x"), "KEY_DISABLED", 3),
    (errors.KmsUnavailableError("x"), "KMS_UNAVAILABLE", 3),
    (errors.KeyUsageLimitError("x"), "KEY_ERROR", 3),
    (errors.MissingKeyError("x"), "MISSING_KEY", 2),
    (errors.ParquetFileError("x"), "ERROR", 3),
    (errors.NotParquetError("x"), "NOT_PARQUET", 2),
    (errors.ColumnNotFoundError("x"), "COLUMN_NOT_FOUND", 2),
    (errors.AmbiguousColumnError("x"), "AMBIGUOUS_COLUMN", 2),
    (errors.UnsupportedParquetFeatureError("x"), "UNSUPPORTED", 3),
    (errors.PlaintextFilterOnEncryptedColumnError("x"), "ERROR", 3),
    (errors.NotRegularFileError("x"), "NOT_REGULAR_FILE", 2),
    (errors.StorageUnavailableError("x"), "STORAGE_UNAVAILABLE", 2),
    (errors.FileChangedError("x"), "ERROR", 3),
    (errors.DeadlineExceededError("x"), "STORAGE_UNAVAILABLE", 2),
    (errors.AttachError("x"), "ERROR", 3),
    (errors.DestinationExistsError("x"), "FILE_EXISTS", 2),
    (errors.SourceChangedError("x"), "ERROR", 3),
    (errors.AttachVerificationError("x"), "ERROR", 3),
    (errors.WriteError("x"), "ERROR", 3),
    (errors.ConfigurationError("x"), "USAGE_ERROR", 2),
    (errors.PolicyError("x"), "INVALID_POLICY", 2),
    (errors.MissingDependencyError("x"), "USAGE_ERROR", 2),
    (errors.JvmError("x"), "ERROR", 3),
    (errors.JavaNotFoundError("x"), "FILE_NOT_FOUND", 2),
    # builtins
    (FileNotFoundError(2, "No such file or directory"), "FILE_NOT_FOUND", 2),
    (IsADirectoryError(21, "Is a directory"), "IS_A_DIRECTORY", 2),
    (NotADirectoryError(20, "Not a directory"), "NOT_A_DIRECTORY", 2),
    (FileExistsError(17, "File exists"), "FILE_EXISTS", 2),
    (PermissionError(13, "Permission denied"), "IO_ERROR", 3),
    (OSError(5, "Input/output error"), "IO_ERROR", 3),
    (KeyError("x"), "INTERNAL_ERROR", 3),
    (ValueError("x"), "INTERNAL_ERROR", 3),
    # the CLI's own
    (UsageError("x"), "USAGE_ERROR", 2),
    (CliError("x", ErrorKind.NO_PARQUET_FILES), "NO_PARQUET_FILES", 2),
]


@pytest.mark.parametrize("error,kind,code", KINDS, ids=[type(e).__name__ for e, _, _ in KINDS])
def test_error_kind_and_exit_code(error: BaseException, kind: str, code: int) -> None:
    assert (error_kind(error), exit_code(error)) == (kind, code)
    assert error_kind(error).caller_fixable is (code == EXIT_USAGE)


def test_every_error_class_carries_its_kind() -> None:
    classes = [getattr(errors, name) for name in errors.__all__]
    exceptions = [c for c in classes if isinstance(c, type) and issubclass(c, BaseException)]
    assert len(exceptions) == 39
    assert all(isinstance(c.kind, ErrorKind) for c in exceptions)
    assert {type(e) for e, _, _ in KINDS} >= set(exceptions)  # the table above covers each class


def test_kinds_are_their_strings() -> None:
    """Audit JSON and Spark rows carry the kind as a plain string."""
    assert json.dumps({"kind": ErrorKind.NOT_PARQUET}) == '{"kind": "NOT_PARQUET"}'
    assert str(ErrorKind.MISSING_KEY) == "MISSING_KEY" and ErrorKind("IO_ERROR") is ErrorKind.IO_ERROR
    assert all(kind.name == kind.value for kind in ErrorKind)


def test_discovery_problems_are_error_kinds() -> None:
    """What discovery cannot search or read is could-not-check: each kind is in the table, and the
    caller's to fix (the CLI exits 2 after the output for the rest), an object store that cannot
    be reached included."""
    assert all(ErrorKind(k).caller_fixable for k in PROBLEM_KINDS)


def test_cli_error_code_follows_its_kind_unless_given() -> None:
    assert CliError("x", ErrorKind.IO_ERROR).code == EXIT_ERROR
    assert CliError("x", ErrorKind.FILE_EXISTS).code == EXIT_USAGE
    assert CliError("x", ErrorKind.UNREADABLE_DIRECTORY, code=1).code == 1

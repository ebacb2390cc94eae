"""The exceptions secure_bloom raises, in one hierarchy, and the one table of error kinds.

Every error derives from :class:`SecureBloomError`. Errors about malformed input also derive from
``ValueError``; lookups that find nothing also derive from ``LookupError``; so callers may catch
either the library's class or the builtin they already handle.

Every error class carries its :class:`ErrorKind` (``kind``, in brackets below), and
:func:`error_kind` maps any exception, builtins included, to one. That one table gives the CLI's
exit code (2 when the kind is the caller's to fix, 3 for a failure), audit's
``FileResult.error_kind`` and the ``error_kind`` column of the Spark dataset rows.

Rules kept across the code base:

* A message names the module type, ordinals, sizes, key *ids* or file paths involved, never key
  bytes (raw, hex or base64) and never decrypted plaintext.
* AES-GCM authentication failures are converted in exactly one place
  (:func:`secure_bloom.crypto.gcm.decrypt`) into the :class:`AuthenticationError` its caller names
  (:class:`ModuleAuthenticationError` for modules), which never says whether the key, the AAD or the
  data was wrong.

::

    SecureBloomError                                    [ERROR]
    ├── MalformedInputError (ValueError)                [MALFORMED_FILE]
    │   ├── MalformedHeaderError        Bloom filter header Thrift invalid or unsupported
    │   ├── MalformedBitsetError        bitset size does not match its header
    │   ├── MalformedModuleError        encrypted module framing invalid
    │   │   └── TruncatedModuleError    fewer bytes than the framing declares
    │   ├── MalformedThriftError        Thrift structure (footer, metadata) invalid
    │   ├── MalformedKeyMaterialError   key material JSON / key list invalid  [MALFORMED_KEY_MATERIAL]
    │   └── InvalidValueError           a value cannot be encoded for a column's type  [INVALID_VALUE]
    ├── AuthenticationError                             [AUTHENTICATION_FAILED]
    │   ├── ModuleAuthenticationError   AES-GCM tag check failed for a module
    │   └── FooterSignatureError        plaintext-footer signature does not verify
    ├── KeyManagementError                              [KEY_ERROR]
    │   ├── KeyNotFoundError (LookupError)  no key for an id / master key unknown  [KEY_NOT_FOUND]
    │   ├── KeyAccessDeniedError        the KMS refused (HTTP 403, bad token)  [KEY_ACCESS_DENIED]
    │   ├── KmsUnavailableError         KMS unreachable, timed out, or 5xx after retries  [KMS_UNAVAILABLE]
    │   ├── KeyDisabledError            the master key exists but is disabled or pending deletion  [KEY_DISABLED]
    │   ├── KeyUsageLimitError          a key reached the AES-GCM invocation limit (2^32)
    │   └── MissingKeyError             a file needs a key the caller did not provide  [MISSING_KEY]
    ├── ParquetFileError                                [ERROR]
    │   ├── NotParquetError (ValueError)    not a Parquet file / bad magic / bad footer length  [NOT_PARQUET]
    │   ├── ColumnNotFoundError (LookupError)                   [COLUMN_NOT_FOUND]
    │   ├── AmbiguousColumnError (LookupError)  a dotted path names more than one leaf  [AMBIGUOUS_COLUMN]
    │   ├── UnsupportedParquetFeatureError  a valid file using something we do not handle  [UNSUPPORTED]
    │   ├── PlaintextFilterOnEncryptedColumnError  refused: would leak an encrypted column
    │   ├── NotRegularFileError          a FIFO, socket or device where a file was expected  [NOT_REGULAR_FILE]
    │   ├── FileChangedError             a file changed or was replaced between pruning and scanning it
    │   ├── AttachError                  attach could not complete; the source is untouched
    │   │   ├── DestinationExistsError (FileExistsError)  dst exists, overwrite not asked  [FILE_EXISTS]
    │   │   ├── SourceChangedError (FileChangedError)  the source changed or was replaced while attach read it
    │   │   └── AttachVerificationError  the copy written does not read back as written; not published
    │   └── WriteError                   write_table / ParquetWriter could not complete; nothing published
    ├── ConfigurationError (ValueError)  options or settings that cannot work as given  [USAGE_ERROR]
    │   └── PolicyError                  a compliance policy file is invalid  [INVALID_POLICY]
    ├── MissingDependencyError (ImportError)  an optional dependency is not installed: names its extra  [USAGE_ERROR]
    └── JvmError                        the Java side (javac, a harness, Spark's JVM) failed
        └── JavaNotFoundError (FileNotFoundError)  no java/javac, or pyspark's jars missing  [FILE_NOT_FOUND]

A class without brackets has its parent's kind. Builtins (:func:`error_kind`): FileNotFoundError
[FILE_NOT_FOUND], IsADirectoryError [IS_A_DIRECTORY], NotADirectoryError [NOT_A_DIRECTORY],
FileExistsError [FILE_EXISTS], any other OSError [IO_ERROR], anything else [INTERNAL_ERROR].
"""

from __future__ import annotations

from enum import Enum
from typing import ClassVar

__all__ = [
    "ErrorKind",
    "error_kind",
    "SecureBloomError",
    "MalformedInputError",
    "MalformedHeaderError",
    "MalformedBitsetError",
    "MalformedModuleError",
    "TruncatedModuleError",
    "MalformedThriftError",
    "MalformedKeyMaterialError",
    "InvalidValueError",
    "AuthenticationError",
    "ModuleAuthenticationError",
    "FooterSignatureError",
    "KeyManagementError",
    "KeyNotFoundError",
    "KeyAccessDeniedError",
    "KmsUnavailableError",
    "KeyDisabledError",
    "KeyUsageLimitError",
    "MissingKeyError",
    "ParquetFileError",
    "NotParquetError",
    "ColumnNotFoundError",
    "AmbiguousColumnError",
    "UnsupportedParquetFeatureError",
    "PlaintextFilterOnEncryptedColumnError",
    "NotRegularFileError",
    "FileChangedError",
    "StorageUnavailableError",
    "DeadlineExceededError",
    "AttachError",
    "AttachVerificationError",
    "DestinationExistsError",
    "SourceChangedError",
    "WriteError",
    "ConfigurationError",
    "PolicyError",
    "MissingDependencyError",
    "JvmError",
    "JavaNotFoundError",
]


# --- error kinds ------------------------------------------------------------------------------


class ErrorKind(str, Enum):
    """What went wrong, as the stable string audit reports and Spark rows carry, and whose it is
    to fix: ``caller_fixable`` kinds (bad options, a missing or non-Parquet file, an unknown
    column, a value that does not fit, a missing or wrong key, an object store that cannot be
    reached: could not check) make the CLI exit 2, the others
    (a corrupt file, the KMS down or refusing, an I/O error, a bug) exit 3.

    Every member *is* its string (``str`` subclass): ``json.dumps`` and ``==`` against the old
    literals keep working.
    """

    caller_fixable: bool

    def __new__(cls, value: str, caller_fixable: bool) -> ErrorKind:
        member = str.__new__(cls, value)
        member._value_ = value
        member.caller_fixable = caller_fixable
        return member

    def __str__(self) -> str:
        return str(self.value)

    # the caller's to fix (CLI exit 2)
    USAGE_ERROR = "USAGE_ERROR", True                # options that cannot work as given
    FILE_NOT_FOUND = "FILE_NOT_FOUND", True
    IS_A_DIRECTORY = "IS_A_DIRECTORY", True          # a directory where a file was expected
    NOT_A_DIRECTORY = "NOT_A_DIRECTORY", True
    FILE_EXISTS = "FILE_EXISTS", True                # an output exists and overwriting was not asked
    NOT_REGULAR_FILE = "NOT_REGULAR_FILE", True      # a FIFO, socket or device
    DANGLING_SYMLINK = "DANGLING_SYMLINK", True
    NO_PARQUET_FILES = "NO_PARQUET_FILES", True      # a directory without Parquet files
    UNREADABLE_DIRECTORY = "UNREADABLE_DIRECTORY", True
    UNREADABLE_FILE = "UNREADABLE_FILE", True        # found under a directory, but cannot be opened
    NOT_PARQUET = "NOT_PARQUET", True
    COLUMN_NOT_FOUND = "COLUMN_NOT_FOUND", True
    AMBIGUOUS_COLUMN = "AMBIGUOUS_COLUMN", True
    INVALID_VALUE = "INVALID_VALUE", True            # a value that does not fit the column's type
    MISSING_KEY = "MISSING_KEY", True
    KEY_NOT_FOUND = "KEY_NOT_FOUND", True
    MALFORMED_KEY_MATERIAL = "MALFORMED_KEY_MATERIAL", True
    AUTHENTICATION_FAILED = "AUTHENTICATION_FAILED", True  # a wrong key (or tampered data: not told apart)
    INVALID_POLICY = "INVALID_POLICY", True          # a compliance policy file that cannot be used
    # an object store that cannot be reached, or does not answer within the deadline: nothing
    # could be checked ("could not check", as audit reports it)
    STORAGE_UNAVAILABLE = "STORAGE_UNAVAILABLE", True
    # failures (CLI exit 3)
    KMS_UNAVAILABLE = "KMS_UNAVAILABLE", False
    KEY_ACCESS_DENIED = "KEY_ACCESS_DENIED", False
    KEY_DISABLED = "KEY_DISABLED", False             # the master key is disabled or pending deletion
    KEY_ERROR = "KEY_ERROR", False
    UNSUPPORTED = "UNSUPPORTED", False
    MALFORMED_FILE = "MALFORMED_FILE", False
    IO_ERROR = "IO_ERROR", False
    ERROR = "ERROR", False
    INTERNAL_ERROR = "INTERNAL_ERROR", False


_BUILTIN_KINDS: tuple[tuple[type[BaseException], ErrorKind], ...] = (
    (FileNotFoundError, ErrorKind.FILE_NOT_FOUND),
    (IsADirectoryError, ErrorKind.IS_A_DIRECTORY),
    (NotADirectoryError, ErrorKind.NOT_A_DIRECTORY),
    (FileExistsError, ErrorKind.FILE_EXISTS),
    (OSError, ErrorKind.IO_ERROR),
)


def error_kind(error: BaseException) -> ErrorKind:
    """The kind of any exception: its ``kind`` (every secure_bloom error has one), else the
    builtin's (FileNotFoundError, IsADirectoryError, NotADirectoryError, FileExistsError, other
    OSError), else ``INTERNAL_ERROR``.

    Parameters
    ----------
    error : BaseException
        Any exception.

    Returns
    -------
    ErrorKind
        Its kind (exit code, audit status, Spark rows).

    Raises
    ------
    None
        Nothing of its own.

    Examples
    --------
    >>> from secure_bloom.errors import KeyNotFoundError, error_kind
    >>> error_kind(KeyNotFoundError("no such key")).name, error_kind(FileNotFoundError()).name
    ('KEY_NOT_FOUND', 'FILE_NOT_FOUND')
    """
    kind = getattr(error, "kind", None)
    if isinstance(kind, ErrorKind):
        return kind
    return next((k for cls, k in _BUILTIN_KINDS if isinstance(error, cls)), ErrorKind.INTERNAL_ERROR)


class SecureBloomError(Exception):
    """Base class of every error raised by secure_bloom."""

    kind: ClassVar[ErrorKind] = ErrorKind.ERROR


# --- malformed input -------------------------------------------------------------------------


class MalformedInputError(SecureBloomError, ValueError):
    """Input bytes or text that do not follow the format they claim to."""

    kind = ErrorKind.MALFORMED_FILE


class MalformedHeaderError(MalformedInputError):
    """A BloomFilterHeader that is not valid Thrift, or declares an unsupported or out-of-range
    filter (Parquet BloomFilter.md, "File Format")."""


class MalformedBitsetError(MalformedInputError):
    """A bitset whose length differs from the header's numBytes, or that is not whole blocks."""


class MalformedModuleError(MalformedInputError):
    """Encrypted module framing (Parquet Encryption.md, "Encrypted module serialization") is
    invalid: a length prefix out of range or inconsistent with what follows."""


class TruncatedModuleError(MalformedModuleError):
    """Fewer bytes are available than the module's framing declares."""


class MalformedThriftError(MalformedInputError):
    """A Thrift structure (file metadata, column metadata, crypto metadata) cannot be parsed or
    misses a required field."""


class MalformedKeyMaterialError(MalformedInputError):
    """Key material JSON, a key list, or a key specification is not in the expected format."""

    kind = ErrorKind.MALFORMED_KEY_MATERIAL


class InvalidValueError(MalformedInputError):
    """A value cannot be encoded for the requested physical or logical type."""

    kind = ErrorKind.INVALID_VALUE


# --- authentication ------------------------------------------------------------------------


class AuthenticationError(SecureBloomError):
    """Authenticated decryption or signature verification failed."""

    kind = ErrorKind.AUTHENTICATION_FAILED


class ModuleAuthenticationError(AuthenticationError):
    """AES-GCM authentication of a module failed. Deliberately does not say whether the key, the
    AAD (file, module type, ordinals) or the ciphertext was wrong."""

    def __init__(self, module_type: object, detail: str = "") -> None:
        self.module_type = module_type
        name = getattr(module_type, "name", str(module_type))
        msg = f"authentication failed for {name} module (wrong key, wrong AAD or tampered data)"
        if detail:
            msg += f"; {detail}"
        super().__init__(msg)


class FooterSignatureError(AuthenticationError):
    """The signature of a plaintext footer does not verify with the footer key."""


# --- key management ------------------------------------------------------------------------


class KeyManagementError(SecureBloomError):
    """Obtaining, wrapping or unwrapping a key failed."""

    kind = ErrorKind.KEY_ERROR


class KeyNotFoundError(KeyManagementError, LookupError):
    """No key is known under the given id (a master key unknown to the KMS, an unknown key id)."""

    kind = ErrorKind.KEY_NOT_FOUND


class KeyAccessDeniedError(KeyManagementError):
    """The KMS refused access to a key (HTTP 403, expired or revoked token)."""

    kind = ErrorKind.KEY_ACCESS_DENIED


class KmsUnavailableError(KeyManagementError):
    """The KMS could not be reached, timed out, or kept failing with server errors."""

    kind = ErrorKind.KMS_UNAVAILABLE


class KeyDisabledError(KeyManagementError):
    """The KMS knows the master key but will not use it: it is disabled, pending deletion or
    otherwise in a state that refuses encryption and decryption (AWS KMS ``DisabledException``,
    ``KMSInvalidStateException``). Nothing was wrapped or unwrapped; an administrator has to
    enable the key again (or cancel its deletion)."""

    kind = ErrorKind.KEY_DISABLED


class KeyUsageLimitError(KeyManagementError):
    """A key reached the AES-GCM invocation limit (2^32 encryptions, NIST SP 800-38D)."""


class MissingKeyError(KeyManagementError):
    """The file needs a key (footer or column) that the caller did not make available."""

    kind = ErrorKind.MISSING_KEY


# --- parquet files -------------------------------------------------------------------------


class ParquetFileError(SecureBloomError):
    """A Parquet file cannot be read, written or changed as asked."""


class NotParquetError(ParquetFileError, ValueError):
    """The file is not Parquet: bad magic bytes, impossible footer length, or too short."""

    kind = ErrorKind.NOT_PARQUET


class ColumnNotFoundError(ParquetFileError, LookupError):
    """No leaf column has the given path."""

    kind = ErrorKind.COLUMN_NOT_FOUND


class AmbiguousColumnError(ParquetFileError, LookupError):
    """A dotted column path matches more than one leaf (a column named ``a.b`` and a field ``b`` of
    a group ``a``); name the leaf by its list of path parts instead."""

    kind = ErrorKind.AMBIGUOUS_COLUMN


class UnsupportedParquetFeatureError(ParquetFileError):
    """The file is valid but uses a feature secure_bloom does not handle."""

    kind = ErrorKind.UNSUPPORTED


class PlaintextFilterOnEncryptedColumnError(ParquetFileError):
    """Refused: writing a plaintext Bloom filter for an encrypted column would reveal its values."""


class NotRegularFileError(ParquetFileError):
    """The path names a FIFO, socket or device, not a regular file: refused without reading it
    (a read could block forever). A directory raises the builtin ``IsADirectoryError`` instead."""

    kind = ErrorKind.NOT_REGULAR_FILE


class StorageUnavailableError(SecureBloomError, OSError):
    """The object store (S3, GCS...) holding a file could not be reached: connection refused or
    timed out after the filesystem's bounded retries. Nothing about the file is known."""

    kind = ErrorKind.STORAGE_UNAVAILABLE


class FileChangedError(ParquetFileError):
    """A file is no longer the version its row groups were chosen from: it was modified or
    replaced (``os.replace``, a new object version) between pruning and the scan of its row
    groups. Nothing of it was returned; a new read prunes the new version."""


class DeadlineExceededError(StorageUnavailableError):
    """A command did not finish within its overall deadline (``secure-bloom --deadline``): a
    store that accepts connections and never answers, or one too slow. Nothing was written."""


class AttachError(ParquetFileError):
    """attach_bloom_filters could not complete. The source file is untouched and no partial
    destination is left behind."""


class DestinationExistsError(AttachError, FileExistsError):
    """The destination exists (or appeared while attach ran, or is a dangling symlink) and
    overwriting was not asked for: it was left as it is."""

    kind = ErrorKind.FILE_EXISTS


class SourceChangedError(AttachError, FileChangedError):
    """The source file was modified or replaced while attach read it: nothing was published."""


class AttachVerificationError(AttachError):
    """The copy attach wrote does not read back as written (its footer, a filter, or a kept filter
    differs or no longer parses or authenticates): it was not published. The message names what
    failed; no exception is chained to it (one raised while decrypting is not carried along)."""


class WriteError(ParquetFileError):
    """Writing a Parquet file with Bloom filters (:mod:`secure_bloom.parquet.write.writer`) could not
    complete: nothing was published (no partial file, no file without its filters)."""


# --- the JVM side (secure_bloom.spark) --------------------------------------------------------


class ConfigurationError(SecureBloomError, ValueError):
    """Options or settings that cannot work as given (key sources named twice, a KMS URL
    without its token); the message names options and variables, never secret values."""

    kind = ErrorKind.USAGE_ERROR


class PolicyError(ConfigurationError):
    """A compliance policy (TOML) that cannot be used: invalid TOML, an unknown key, a bad glob, a
    value of the wrong type, or contradictory rules. The message starts with ``file:line:``
    where the line is known."""

    kind = ErrorKind.INVALID_POLICY


class MissingDependencyError(SecureBloomError, ImportError):
    """A feature needs an optional dependency that is not installed (hvac for
    :class:`~secure_bloom.kms.openbao.OpenBaoTransitKms`); the message names the extra to install,
    e.g. ``pip install 'secure-bloom[vault]'``."""

    kind = ErrorKind.USAGE_ERROR


class JvmError(SecureBloomError):
    """A Java step failed: compiling the harness jar, or a harness or KMS call on the JVM exited
    with an error. The message carries the JVM's one-line error, never key material."""


class JavaNotFoundError(JvmError, FileNotFoundError):
    """``java``/``javac`` (JAVA_HOME or PATH) or pyspark's jars directory cannot be found."""

    kind = ErrorKind.FILE_NOT_FOUND

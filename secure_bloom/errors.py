"""The exceptions secure_bloom raises, in one hierarchy.

Every error derives from :class:`SecureBloomError`. Errors about malformed input also derive from
``ValueError``; lookups that find nothing also derive from ``LookupError``; so callers may catch
either the library's class or the builtin they already handle.

Rules kept across the code base:

* A message names the module type, ordinals, sizes, key *ids* or file paths involved, never key
  bytes (raw, hex or base64) and never decrypted plaintext.
* AES-GCM authentication failures are converted in exactly one place
  (:func:`secure_bloom.crypto.gcm.decrypt`) into the :class:`AuthenticationError` its caller names
  (:class:`ModuleAuthenticationError` for modules), which never says whether the key, the AAD or the
  data was wrong.

::

    SecureBloomError
    ├── MalformedInputError (ValueError)
    │   ├── MalformedHeaderError        Bloom filter header Thrift invalid or unsupported
    │   ├── MalformedBitsetError        bitset size does not match its header
    │   ├── MalformedModuleError        encrypted module framing invalid
    │   │   └── TruncatedModuleError    fewer bytes than the framing declares
    │   ├── MalformedThriftError        Thrift structure (footer, metadata) invalid
    │   ├── MalformedKeyMaterialError   key material JSON / key list invalid
    │   └── InvalidValueError           a value cannot be encoded for a column's type
    ├── AuthenticationError
    │   ├── ModuleAuthenticationError   AES-GCM tag check failed for a module
    │   └── FooterSignatureError        plaintext-footer signature does not verify
    ├── KeyManagementError
    │   ├── KeyNotFoundError (LookupError)  no key for an id / master key unknown to the KMS
    │   ├── KeyAccessDeniedError        the KMS refused (HTTP 403, bad token)
    │   ├── KmsUnavailableError         KMS unreachable, timed out, or 5xx after retries
    │   ├── KeyUsageLimitError          a key reached the AES-GCM invocation limit (2^32)
    │   └── MissingKeyError             a file needs a key the caller did not provide
    ├── ParquetFileError
    │   ├── NotParquetError (ValueError)    not a Parquet file / bad magic / bad footer length
    │   ├── ColumnNotFoundError (LookupError)
    │   ├── AmbiguousColumnError (LookupError)  a dotted path names more than one leaf
    │   ├── UnsupportedParquetFeatureError  a valid file using something we do not handle
    │   ├── PlaintextFilterOnEncryptedColumnError  refused: would leak an encrypted column
    │   ├── NotRegularFileError          a FIFO, socket or device where a file was expected
    │   └── AttachError                  attach could not complete; the source is untouched
    │       ├── DestinationExistsError (FileExistsError)  dst exists (or appeared) without overwrite
    │       └── SourceChangedError       the source changed or was replaced while attach read it
    └── JvmError                        the Java side (javac, a harness, Spark's JVM) failed
        └── JavaNotFoundError (FileNotFoundError)  no java/javac, or pyspark's jars missing
"""

from __future__ import annotations

__all__ = [
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
    "KeyUsageLimitError",
    "MissingKeyError",
    "ParquetFileError",
    "NotParquetError",
    "ColumnNotFoundError",
    "AmbiguousColumnError",
    "UnsupportedParquetFeatureError",
    "PlaintextFilterOnEncryptedColumnError",
    "NotRegularFileError",
    "AttachError",
    "DestinationExistsError",
    "SourceChangedError",
    "JvmError",
    "JavaNotFoundError",
]


class SecureBloomError(Exception):
    """Base class of every error raised by secure_bloom."""


# --- malformed input -------------------------------------------------------------------------


class MalformedInputError(SecureBloomError, ValueError):
    """Input bytes or text that do not follow the format they claim to."""


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


class InvalidValueError(MalformedInputError):
    """A value cannot be encoded for the requested physical or logical type."""


# --- authentication ------------------------------------------------------------------------


class AuthenticationError(SecureBloomError):
    """Authenticated decryption or signature verification failed."""


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


class KeyNotFoundError(KeyManagementError, LookupError):
    """No key is known under the given id (a master key unknown to the KMS, an unknown key id)."""


class KeyAccessDeniedError(KeyManagementError):
    """The KMS refused access to a key (HTTP 403, expired or revoked token)."""


class KmsUnavailableError(KeyManagementError):
    """The KMS could not be reached, timed out, or kept failing with server errors."""


class KeyUsageLimitError(KeyManagementError):
    """A key reached the AES-GCM invocation limit (2^32 encryptions, NIST SP 800-38D)."""


class MissingKeyError(KeyManagementError):
    """The file needs a key (footer or column) that the caller did not make available."""


# --- parquet files -------------------------------------------------------------------------


class ParquetFileError(SecureBloomError):
    """A Parquet file cannot be read, written or changed as asked."""


class NotParquetError(ParquetFileError, ValueError):
    """The file is not Parquet: bad magic bytes, impossible footer length, or too short."""


class ColumnNotFoundError(ParquetFileError, LookupError):
    """No leaf column has the given path."""


class AmbiguousColumnError(ParquetFileError, LookupError):
    """A dotted column path matches more than one leaf (a column named ``a.b`` and a field ``b`` of
    a group ``a``); name the leaf by its list of path parts instead."""


class UnsupportedParquetFeatureError(ParquetFileError):
    """The file is valid but uses a feature secure_bloom does not handle."""


class PlaintextFilterOnEncryptedColumnError(ParquetFileError):
    """Refused: writing a plaintext Bloom filter for an encrypted column would reveal its values."""


class NotRegularFileError(ParquetFileError):
    """The path names a FIFO, socket or device, not a regular file: refused without reading it
    (a read could block forever). A directory raises the builtin ``IsADirectoryError`` instead."""


class AttachError(ParquetFileError):
    """attach_bloom_filters could not complete. The source file is untouched and no partial
    destination is left behind."""


class DestinationExistsError(AttachError, FileExistsError):
    """The destination exists (or appeared while attach ran, or is a dangling symlink) and
    overwriting was not asked for: it was left as it is."""


class SourceChangedError(AttachError):
    """The source file was modified or replaced while attach read it: nothing was published."""


# --- the JVM side (secure_bloom.spark) --------------------------------------------------------


class JvmError(SecureBloomError):
    """A Java step failed: compiling the harness jar, or a harness or KMS call on the JVM exited
    with an error. The message carries the JVM's one-line error, never key material."""


class JavaNotFoundError(JvmError, FileNotFoundError):
    """``java``/``javac`` (JAVA_HOME or PATH) or pyspark's jars directory cannot be found."""

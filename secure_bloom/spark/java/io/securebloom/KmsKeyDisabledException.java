package io.securebloom;

import org.apache.parquet.crypto.ParquetCryptoRuntimeException;

/**
 * The KMS knows the master key but will not use it: it is disabled or pending deletion (AWS KMS
 * {@code DisabledException}, {@code KMSInvalidStateException}). The JVM side of secure_bloom's
 * {@code KeyDisabledError}; nothing was wrapped or unwrapped.
 */
public class KmsKeyDisabledException extends ParquetCryptoRuntimeException {
  private static final long serialVersionUID = 1L;

  public KmsKeyDisabledException(String message) {
    super(message);
  }
}

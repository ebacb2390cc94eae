package io.securebloom;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.crypto.AEADBadTagException;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.crypto.KeyAccessDeniedException;
import org.apache.parquet.crypto.ParquetCryptoRuntimeException;
import org.apache.parquet.crypto.keytools.KmsClient;

/**
 * A KMS client whose master keys come from the Hadoop property {@code parquet.encryption.key.list}
 * ("id1:base64key1, id2:base64key2"), with the semantics of parquet-java's test KMS (InMemoryKMS)
 * and Spark's documented example (SPEC_NOTES section 7).
 *
 * <p>wrapKey = Base64(nonce 12 | AES-GCM ciphertext | tag 16) under the master key, a fresh random
 * nonce, AAD = the master key id as UTF-8; unwrapKey reverses it. No length prefix.
 *
 * <p>Messages name master key ids, never key bytes. Meant for tests, demos and files whose master
 * keys are managed outside a KMS; production deployments should use a real KMS (see
 * {@link VaultTransitKmsClient}).
 */
public class KeyListKmsClient implements KmsClient {
  /** The Hadoop property holding the master keys. */
  public static final String KEY_LIST_PROPERTY_NAME = "parquet.encryption.key.list";

  static final int NONCE_LENGTH = 12;
  static final int TAG_LENGTH = 16;
  private static final SecureRandom RANDOM = new SecureRandom();

  private Map<String, byte[]> masterKeys = Collections.emptyMap();

  @Override
  public void initialize(
      Configuration configuration, String kmsInstanceID, String kmsInstanceURL, String accessToken) {
    String keyList = configuration.getTrimmed(KEY_LIST_PROPERTY_NAME);
    if (keyList == null || keyList.isEmpty()) {
      throw new ParquetCryptoRuntimeException(
          "No master keys: set the Hadoop property " + KEY_LIST_PROPERTY_NAME);
    }
    masterKeys = parseKeyList(keyList);
  }

  /**
   * Parses "id1:base64key1, id2:base64key2" into an ordered id -&gt; key map, as
   * secure_bloom.kms.key_list.parse_key_list does: entries separated by commas or newlines, blank
   * entries and entries starting with # skipped, whitespace ignored; keys must be 16, 24 or 32
   * bytes; ids must be unique.
   */
  public static Map<String, byte[]> parseKeyList(String keyList) {
    Map<String, byte[]> keys = new LinkedHashMap<>();
    int index = 0;
    for (String entry : keyList.split("[,\\n]")) {
      String trimmed = entry.trim();
      if (trimmed.isEmpty() || trimmed.startsWith("#")) {
        continue;
      }
      index++;
      int colon = trimmed.indexOf(':');
      if (colon <= 0 || trimmed.indexOf(':', colon + 1) >= 0) {
        throw new ParquetCryptoRuntimeException(
            "Key list entry " + index + " is not of the form id:base64key");
      }
      String id = trimmed.substring(0, colon).trim();
      byte[] key;
      try {
        key = Base64.getDecoder().decode(trimmed.substring(colon + 1).trim());
      } catch (IllegalArgumentException e) {
        throw new ParquetCryptoRuntimeException(
            "Master key '" + id + "' in the key list is not valid base64");
      }
      if (key.length != 16 && key.length != 24 && key.length != 32) {
        throw new ParquetCryptoRuntimeException(
            "Master key '" + id + "' has " + key.length + " bytes; AES needs 16, 24 or 32");
      }
      if (keys.put(id, key) != null) {
        throw new ParquetCryptoRuntimeException("Master key id '" + id + "' appears twice in the key list");
      }
    }
    if (keys.isEmpty()) {
      throw new ParquetCryptoRuntimeException("The key list has no entries");
    }
    return Collections.unmodifiableMap(keys);
  }

  private byte[] masterKey(String masterKeyIdentifier) {
    byte[] key = masterKeys.get(masterKeyIdentifier);
    if (key == null) {
      throw new KeyAccessDeniedException(
          "Master key '" + masterKeyIdentifier + "' is not in " + KEY_LIST_PROPERTY_NAME);
    }
    return key;
  }

  @Override
  public String wrapKey(byte[] keyBytes, String masterKeyIdentifier) {
    byte[] aad = masterKeyIdentifier.getBytes(StandardCharsets.UTF_8);
    return Base64.getEncoder().encodeToString(gcmWrap(keyBytes, masterKey(masterKeyIdentifier), aad));
  }

  @Override
  public byte[] unwrapKey(String wrappedKey, String masterKeyIdentifier) {
    byte[] key = masterKey(masterKeyIdentifier);
    byte[] wrapped;
    try {
      wrapped = Base64.getDecoder().decode(wrappedKey);
    } catch (IllegalArgumentException e) {
      throw new ParquetCryptoRuntimeException(
          "Wrapped key for master key '" + masterKeyIdentifier + "' is not valid base64");
    }
    byte[] aad = masterKeyIdentifier.getBytes(StandardCharsets.UTF_8);
    return gcmUnwrap(wrapped, key, aad, "master key '" + masterKeyIdentifier + "'");
  }

  /** AES-GCM encrypts {@code plaintext}: nonce 12 | ciphertext | tag 16 (SPEC_NOTES section 7). */
  static byte[] gcmWrap(byte[] plaintext, byte[] key, byte[] aad) {
    byte[] nonce = new byte[NONCE_LENGTH];
    RANDOM.nextBytes(nonce);
    try {
      Cipher cipher = Cipher.getInstance("AES/GCM/NoPadding");
      cipher.init(
          Cipher.ENCRYPT_MODE, new SecretKeySpec(key, "AES"), new GCMParameterSpec(TAG_LENGTH * 8, nonce));
      cipher.updateAAD(aad);
      byte[] sealed = cipher.doFinal(plaintext);
      return ByteBuffer.allocate(NONCE_LENGTH + sealed.length).put(nonce).put(sealed).array();
    } catch (GeneralSecurityException e) {
      throw new ParquetCryptoRuntimeException("AES-GCM key wrapping failed: " + e.getClass().getSimpleName());
    }
  }

  /** Reverses {@link #gcmWrap}; {@code what} names the wrapping key in messages. */
  static byte[] gcmUnwrap(byte[] wrapped, byte[] key, byte[] aad, String what) {
    if (wrapped.length < NONCE_LENGTH + TAG_LENGTH) {
      throw new ParquetCryptoRuntimeException(
          "Wrapped key for " + what + " has " + wrapped.length + " bytes, fewer than nonce + tag");
    }
    try {
      Cipher cipher = Cipher.getInstance("AES/GCM/NoPadding");
      cipher.init(
          Cipher.DECRYPT_MODE,
          new SecretKeySpec(key, "AES"),
          new GCMParameterSpec(TAG_LENGTH * 8, wrapped, 0, NONCE_LENGTH));
      cipher.updateAAD(aad);
      return cipher.doFinal(wrapped, NONCE_LENGTH, wrapped.length - NONCE_LENGTH);
    } catch (AEADBadTagException e) {
      throw new ParquetCryptoRuntimeException(
          "Unwrapping with " + what + " failed authentication (wrong master key or corrupted key material)");
    } catch (GeneralSecurityException e) {
      throw new ParquetCryptoRuntimeException("AES-GCM key unwrapping failed: " + e.getClass().getSimpleName());
    }
  }
}

package io.securebloom;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.crypto.KeyAccessDeniedException;
import org.apache.parquet.crypto.ParquetCryptoRuntimeException;
import org.apache.parquet.crypto.keytools.KmsClient;

/**
 * A KMS client for the transit secrets engine of OpenBao / HashiCorp Vault (SPEC_NOTES section 9),
 * using only java.net.http, and for JSON the Jackson that parquet-java shades into parquet-jackson
 * ({@code shaded.parquet.com.fasterxml.jackson}, on every Spark class path; parquet-java's key tools
 * use it for key material).
 *
 * <ul>
 *   <li>kmsInstanceURL: the server, e.g. {@code http://127.0.0.1:8200}
 *       (parquet.encryption.kms.instance.url); accessToken: the token
 *       (parquet.encryption.key.access.token), sent as X-Vault-Token.
 *   <li>Hadoop property {@code secure_bloom.kms.transit.mount}: the engine's mount path (default
 *       "transit").
 *   <li>wrapKey: POST {url}/v1/{mount}/encrypt/{masterKeyId} {"plaintext": base64(key)}; the returned
 *       "vault:v1:..." ciphertext is the wrapped key, verbatim.
 *   <li>unwrapKey: POST {url}/v1/{mount}/decrypt/{masterKeyId} {"ciphertext": wrapped}; the returned
 *       base64 plaintext is the key.
 * </ul>
 *
 * <p>HTTP 401/403 become {@link KeyAccessDeniedException}; anything else that fails becomes a
 * {@link ParquetCryptoRuntimeException} naming the master key id and HTTP status, never key bytes
 * or the token. Connection failures, timeouts, 429 and 5xx are retried twice (0.2 s, then 0.4 s).
 * Redirects are refused (never followed: the token goes to the configured URL only). Timeouts:
 * connect 5 s, response headers 10 s, and a total deadline per call, retries and backoff included,
 * however slowly a server trickles its answer: Hadoop property {@code
 * secure_bloom.kms.transit.deadline.seconds} (default 30).
 */
public class VaultTransitKmsClient implements KmsClient {
  /** Hadoop property naming the transit engine's mount path. */
  public static final String MOUNT_PROPERTY_NAME = "secure_bloom.kms.transit.mount";

  public static final String DEFAULT_MOUNT = "transit";
  /** Hadoop property: the total time one wrapKey / unwrapKey call may take, in seconds. */
  public static final String DEADLINE_PROPERTY_NAME = "secure_bloom.kms.transit.deadline.seconds";

  static final double DEFAULT_DEADLINE_SECONDS = 30.0;
  static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(5);
  static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(10);
  static final int ATTEMPTS = 3;

  private static final Pattern KEY_NAME = Pattern.compile("[A-Za-z0-9._-]+");
  private static final Pattern MOUNT = Pattern.compile("[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*");

  private HttpClient http;
  private String baseUrl;
  private String mount;
  private String token;
  private long deadlineNanos;

  @Override
  public void initialize(
      Configuration configuration, String kmsInstanceID, String kmsInstanceURL, String accessToken) {
    if (kmsInstanceURL == null
        || kmsInstanceURL.isEmpty()
        || KMS_INSTANCE_URL_DEFAULT.equals(kmsInstanceURL)) {
      throw new ParquetCryptoRuntimeException(
          "No OpenBao/Vault URL: set parquet.encryption.kms.instance.url");
    }
    if (!kmsInstanceURL.startsWith("http://") && !kmsInstanceURL.startsWith("https://")) {
      throw new ParquetCryptoRuntimeException(
          "KMS URL must start with http:// or https://: " + kmsInstanceURL);
    }
    if (accessToken == null || accessToken.isEmpty() || KEY_ACCESS_TOKEN_DEFAULT.equals(accessToken)) {
      throw new KeyAccessDeniedException(
          "No OpenBao/Vault token: set parquet.encryption.key.access.token");
    }
    String m = configuration.getTrimmed(MOUNT_PROPERTY_NAME, DEFAULT_MOUNT);
    m = m.replaceAll("^/+|/+$", "");
    if (!MOUNT.matcher(m).matches()) {
      throw new ParquetCryptoRuntimeException("Invalid transit mount path '" + m + "'");
    }
    double deadline = configuration.getDouble(DEADLINE_PROPERTY_NAME, DEFAULT_DEADLINE_SECONDS);
    if (!(deadline > 0) || Double.isInfinite(deadline)) {
      throw new ParquetCryptoRuntimeException(DEADLINE_PROPERTY_NAME + " must be a positive number of seconds");
    }
    this.baseUrl = kmsInstanceURL.replaceAll("/+$", "");
    this.mount = m;
    this.token = accessToken;
    this.deadlineNanos = (long) (deadline * 1e9);
    this.http =
        HttpClient.newBuilder()
            .connectTimeout(CONNECT_TIMEOUT)
            .followRedirects(HttpClient.Redirect.NEVER)
            .build();
  }

  @Override
  public String wrapKey(byte[] keyBytes, String masterKeyIdentifier) {
    String body = KmsHttp.toJson(Map.of("plaintext", Base64.getEncoder().encodeToString(keyBytes)));
    Map<String, Object> data = call("encrypt", masterKeyIdentifier, body);
    Object ciphertext = data.get("ciphertext");
    if (!(ciphertext instanceof String)) {
      throw new ParquetCryptoRuntimeException(
          "OpenBao/Vault encrypt response for master key '" + masterKeyIdentifier + "' has no ciphertext");
    }
    return (String) ciphertext;
  }

  @Override
  public byte[] unwrapKey(String wrappedKey, String masterKeyIdentifier) {
    Map<String, Object> data =
        call("decrypt", masterKeyIdentifier, KmsHttp.toJson(Map.of("ciphertext", wrappedKey)));
    Object plaintext = data.get("plaintext");
    if (!(plaintext instanceof String)) {
      throw new ParquetCryptoRuntimeException(
          "OpenBao/Vault decrypt response for master key '" + masterKeyIdentifier + "' has no plaintext");
    }
    try {
      return Base64.getDecoder().decode((String) plaintext);
    } catch (IllegalArgumentException e) {
      throw new ParquetCryptoRuntimeException(
          "OpenBao/Vault decrypt response for master key '" + masterKeyIdentifier + "' is not base64");
    }
  }

  /** POSTs {@code body} to {mount}/{operation}/{keyId} and returns the response's "data" object. */
  private Map<String, Object> call(String operation, String keyId, String body) {
    if (http == null) {
      throw new IllegalStateException("VaultTransitKmsClient used before initialize()");
    }
    if (keyId == null || !KEY_NAME.matcher(keyId).matches()) {
      throw new ParquetCryptoRuntimeException(
          "Master key id '" + keyId + "' is not a valid transit key name ([A-Za-z0-9._-]+)");
    }
    String url = baseUrl + "/v1/" + mount + "/" + operation + "/" + keyId;
    HttpRequest request =
        HttpRequest.newBuilder(URI.create(url))
            .timeout(REQUEST_TIMEOUT)
            .header("X-Vault-Token", token)
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8))
            .build();
    String what = "OpenBao/Vault transit " + operation + " with master key '" + keyId + "' at " + url;
    return KmsHttp.send(http, what, deadlineNanos, ATTEMPTS, remaining -> request,
        "point parquet.encryption.kms.instance.url at the server that answers", response -> data(what, response));
  }

  /** The "data" object of a 200 answer; 401/403 denied, 429 and 5xx retried, others refused. */
  @SuppressWarnings("unchecked")
  private static Map<String, Object> data(String what, HttpResponse<String> response) throws KmsHttp.Retry {
    int status = response.statusCode();
    if (status == 200) {
      try {
        Object data = KmsHttp.parseObject(response.body()).get("data");
        if (data instanceof Map) {
          return (Map<String, Object>) data;
        }
      } catch (IllegalArgumentException e) {
        // fall through to the error below
      }
      throw new ParquetCryptoRuntimeException(what + ": response has no JSON \"data\" object");
    }
    if (status == 401 || status == 403) {
      throw new KeyAccessDeniedException(what + ": access denied (HTTP " + status + ")" + errors(response.body()));
    }
    String failure = "HTTP " + status + errors(response.body());
    if (status != 429 && status < 500) {
      throw new ParquetCryptoRuntimeException(what + " failed: " + failure);
    }
    throw new KmsHttp.Retry(failure);
  }

  /** The server's "errors" messages, shortened, for exception messages. */
  private static String errors(String body) {
    try {
      Object errs = KmsHttp.parseObject(body).get("errors");
      if (errs instanceof List && !((List<?>) errs).isEmpty()) {
        String joined = String.join("; ", ((List<?>) errs).stream().map(String::valueOf).toArray(String[]::new));
        return ": " + (joined.length() > 200 ? joined.substring(0, 200) + "..." : joined);
      }
    } catch (IllegalArgumentException e) {
      // not JSON: say nothing more
    }
    return "";
  }
}

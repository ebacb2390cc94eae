package io.securebloom;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.crypto.KeyAccessDeniedException;
import org.apache.parquet.crypto.ParquetCryptoRuntimeException;
import org.apache.parquet.crypto.keytools.KmsClient;

/**
 * A KMS client for AWS KMS with the JDK alone: java.net.http, requests signed with {@link
 * AwsSigV4}, JSON with the Jackson parquet-java shades ({@code shaded.parquet.com.fasterxml.jackson}).
 * No AWS SDK is needed; where a cluster has one, see docs/guides/aws-kms.md for a client built on
 * it (same wire format, so the files are the same).
 *
 * <ul>
 *   <li>wrapKey: {@code TrentService.Encrypt {"KeyId": masterKeyId, "Plaintext": base64(key),
 *       "EncryptionContext": ctx}}; the wrapped key is the returned base64 CiphertextBlob.
 *   <li>unwrapKey: {@code TrentService.Decrypt {"CiphertextBlob": wrapped, "EncryptionContext": ctx,
 *       "KeyId": masterKeyId}} ({@code KeyId} left out for an alias, so data wrapped before the
 *       alias moved still unwraps; the context names the alias).
 *   <li>ctx = {@code {"secure_bloom:master_key_id": masterKeyId, "secure_bloom:purpose":
 *       "parquet-key-wrap"}}, as secure_bloom's Python {@code AwsKms}: a wrapped key moved to another
 *       master key id fails ({@code InvalidCiphertextException}).
 * </ul>
 *
 * <p>Hadoop properties: {@code secure_bloom.kms.aws.region} (else $AWS_REGION, $AWS_DEFAULT_REGION),
 * {@code secure_bloom.kms.aws.endpoint} (default https://kms.REGION.amazonaws.com),
 * {@code secure_bloom.kms.aws.access.key.id}, {@code .secret.access.key}, {@code .session.token}
 * (else $AWS_ACCESS_KEY_ID, $AWS_SECRET_ACCESS_KEY, $AWS_SESSION_TOKEN of the JVM), and {@code
 * secure_bloom.kms.aws.deadline.seconds} (default 30): the total time of one call, retries and
 * backoff included.
 *
 * <p>Failures: AccessDeniedException and refused credentials become {@link
 * KeyAccessDeniedException}; DisabledException and KMSInvalidStateException {@link
 * KmsKeyDisabledException}; anything else a {@link ParquetCryptoRuntimeException} naming the
 * operation, master key id and AWS error code, never key bytes or credentials. Throttling, KMS
 * internal errors, HTTP 5xx, timeouts and connection failures are retried (3 more attempts,
 * 0.2 s backoff doubled) while the deadline allows; connect timeout 3 s, response timeout 10 s
 * (each shortened to the time left). Redirects are refused.
 */
public class AwsKmsClient implements KmsClient {
  public static final String REGION_PROPERTY = "secure_bloom.kms.aws.region";
  public static final String ENDPOINT_PROPERTY = "secure_bloom.kms.aws.endpoint";
  public static final String ACCESS_KEY_PROPERTY = "secure_bloom.kms.aws.access.key.id";
  public static final String SECRET_KEY_PROPERTY = "secure_bloom.kms.aws.secret.access.key";
  public static final String SESSION_TOKEN_PROPERTY = "secure_bloom.kms.aws.session.token";
  public static final String DEADLINE_PROPERTY = "secure_bloom.kms.aws.deadline.seconds";
  public static final String CONTEXT_MASTER_KEY_ID = "secure_bloom:master_key_id";
  public static final String CONTEXT_PURPOSE = "secure_bloom:purpose";
  public static final String PURPOSE = "parquet-key-wrap";

  static final double DEFAULT_DEADLINE_SECONDS = 30.0;
  static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(3);
  static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(10);
  static final int ATTEMPTS = 4;
  static final String CONTENT_TYPE = "application/x-amz-json-1.1";

  private static final Pattern REGION = Pattern.compile("[a-z0-9-]+");
  private static final Set<String> RETRYABLE = Set.of("ThrottlingException", "Throttling", "ThrottledException",
      "RequestLimitExceeded", "TooManyRequestsException", "KMSInternalException", "DependencyTimeoutException",
      "KeyUnavailableException", "InternalFailure", "ServiceUnavailable", "ServiceUnavailableException");
  private static final Set<String> DENIED = Set.of("AccessDeniedException", "UnrecognizedClientException",
      "InvalidSignatureException", "IncompleteSignature", "MissingAuthenticationToken", "InvalidClientTokenId",
      "ExpiredTokenException", "RequestExpired", "KMSAccessDeniedException");
  private static final Set<String> DISABLED = Set.of("DisabledException", "KMSInvalidStateException");

  private HttpClient http;
  private URI endpoint;
  private String region;
  private AwsSigV4.Credentials credentials;
  private long deadlineNanos;

  @Override
  public void initialize(
      Configuration configuration, String kmsInstanceID, String kmsInstanceURL, String accessToken) {
    String r = firstSet(configuration.getTrimmed(REGION_PROPERTY), System.getenv("AWS_REGION"),
        System.getenv("AWS_DEFAULT_REGION"));
    if (r == null || !REGION.matcher(r).matches()) {
      throw new ParquetCryptoRuntimeException(
          "No AWS region: set " + REGION_PROPERTY + " (or AWS_REGION in the JVM's environment)");
    }
    String e = configuration.getTrimmed(ENDPOINT_PROPERTY);
    if (e == null || e.isEmpty()) {
      e = "https://kms." + r + ".amazonaws.com" + (r.startsWith("cn-") ? ".cn" : "");
    }
    if (!e.startsWith("http://") && !e.startsWith("https://")) {
      throw new ParquetCryptoRuntimeException(ENDPOINT_PROPERTY + " must start with http:// or https://");
    }
    String access = firstSet(configuration.get(ACCESS_KEY_PROPERTY), System.getenv("AWS_ACCESS_KEY_ID"));
    String secret = firstSet(configuration.get(SECRET_KEY_PROPERTY), System.getenv("AWS_SECRET_ACCESS_KEY"));
    String token = configuration.get(ACCESS_KEY_PROPERTY) != null
        ? configuration.get(SESSION_TOKEN_PROPERTY)
        : firstSet(System.getenv("AWS_SESSION_TOKEN"), System.getenv("AWS_SECURITY_TOKEN"));
    if (access == null || secret == null) {
      throw new KeyAccessDeniedException("No AWS credentials: set " + ACCESS_KEY_PROPERTY + " and "
          + SECRET_KEY_PROPERTY + " (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the JVM's environment)");
    }
    double deadline = configuration.getDouble(DEADLINE_PROPERTY, DEFAULT_DEADLINE_SECONDS);
    if (!(deadline > 0) || Double.isInfinite(deadline)) {
      throw new ParquetCryptoRuntimeException(DEADLINE_PROPERTY + " must be a positive number of seconds");
    }
    this.region = r;
    this.endpoint = URI.create(e.replaceAll("/+$", "") + "/");
    this.credentials = new AwsSigV4.Credentials(access, secret, token);
    this.deadlineNanos = (long) (deadline * 1e9);
    this.http = HttpClient.newBuilder()
        .connectTimeout(CONNECT_TIMEOUT.compareTo(Duration.ofNanos(deadlineNanos)) < 0
            ? CONNECT_TIMEOUT : Duration.ofNanos(deadlineNanos))
        .followRedirects(HttpClient.Redirect.NEVER)
        .version(HttpClient.Version.HTTP_1_1)
        .build();
  }

  /** The encryption context of every key wrapped under {@code masterKeyId}. */
  public static Map<String, String> encryptionContext(String masterKeyId) {
    Map<String, String> context = new LinkedHashMap<>();
    context.put(CONTEXT_MASTER_KEY_ID, masterKeyId);
    context.put(CONTEXT_PURPOSE, PURPOSE);
    return context;
  }

  static boolean isAlias(String masterKeyId) {
    return masterKeyId.startsWith("alias/") || (masterKeyId.startsWith("arn:") && masterKeyId.contains(":alias/"));
  }

  /** The JSON body of the Encrypt request for {@code key} under {@code masterKeyId}. */
  static String encryptBody(byte[] key, String masterKeyId) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("KeyId", masterKeyId);
    body.put("Plaintext", Base64.getEncoder().encodeToString(key));
    body.put("EncryptionContext", encryptionContext(masterKeyId));
    return KmsHttp.toJson(body);
  }

  /** The JSON body of the Decrypt request for {@code wrapped} under {@code masterKeyId}. */
  static String decryptBody(String wrapped, String masterKeyId) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("CiphertextBlob", wrapped);
    body.put("EncryptionContext", encryptionContext(masterKeyId));
    if (!isAlias(masterKeyId)) {
      body.put("KeyId", masterKeyId);
    }
    return KmsHttp.toJson(body);
  }

  @Override
  public String wrapKey(byte[] keyBytes, String masterKeyIdentifier) {
    checkKeyId(masterKeyIdentifier);
    Map<String, Object> response = call("Encrypt", masterKeyIdentifier, encryptBody(keyBytes, masterKeyIdentifier));
    Object blob = response.get("CiphertextBlob");
    if (!(blob instanceof String) || ((String) blob).isEmpty()) {
      throw new ParquetCryptoRuntimeException(
          "AWS KMS Encrypt with key '" + masterKeyIdentifier + "' returned no CiphertextBlob");
    }
    return (String) blob;
  }

  @Override
  public byte[] unwrapKey(String wrappedKey, String masterKeyIdentifier) {
    checkKeyId(masterKeyIdentifier);
    try {
      if (wrappedKey == null || Base64.getDecoder().decode(wrappedKey).length == 0) {
        throw new IllegalArgumentException("empty");
      }
    } catch (IllegalArgumentException e) {
      throw new ParquetCryptoRuntimeException(
          "The wrapped key for AWS KMS key '" + masterKeyIdentifier + "' is not base64");
    }
    Map<String, Object> response =
        call("Decrypt", masterKeyIdentifier, decryptBody(wrappedKey, masterKeyIdentifier));
    Object plaintext = response.get("Plaintext");
    if (!(plaintext instanceof String)) {
      throw new ParquetCryptoRuntimeException(
          "AWS KMS Decrypt with key '" + masterKeyIdentifier + "' returned no Plaintext");
    }
    try {
      return Base64.getDecoder().decode((String) plaintext);
    } catch (IllegalArgumentException e) {
      throw new ParquetCryptoRuntimeException(
          "AWS KMS Decrypt with key '" + masterKeyIdentifier + "' returned a Plaintext that is not base64");
    }
  }

  private static void checkKeyId(String keyId) {
    if (keyId == null || keyId.isEmpty() || keyId.length() > 2048 || !keyId.equals(keyId.trim())) {
      throw new ParquetCryptoRuntimeException("Master key id '" + keyId + "' is not an AWS KMS key id, ARN or alias");
    }
  }

  /**
   * The signed request for one KMS operation: the headers to send (Host included, which
   * java.net.http sets itself from the URI to the same value).
   */
  static AwsSigV4.Signed signedRequest(String operation, byte[] body, URI endpoint, String region,
      AwsSigV4.Credentials credentials, Instant time) {
    List<String[]> headers = new ArrayList<>();
    headers.add(new String[] {"Content-Type", CONTENT_TYPE});
    headers.add(new String[] {"Host", hostHeader(endpoint)});
    headers.add(new String[] {"X-Amz-Target", "TrentService." + operation});
    String path = endpoint.getRawPath() == null || endpoint.getRawPath().isEmpty() ? "/" : endpoint.getRawPath();
    return AwsSigV4.sign("POST", path, List.of(), headers, body, region, "kms", credentials, time);
  }

  /** host[:port], the port left out when it is the scheme's default (as java.net.http sends it). */
  static String hostHeader(URI uri) {
    int port = uri.getPort();
    boolean defaultPort = port == -1 || ("https".equals(uri.getScheme()) && port == 443)
        || ("http".equals(uri.getScheme()) && port == 80);
    return defaultPort ? uri.getHost() : uri.getHost() + ":" + port;
  }

  private Map<String, Object> call(String operation, String keyId, String json) {
    if (http == null) {
      throw new IllegalStateException("AwsKmsClient used before initialize()");
    }
    byte[] body = json.getBytes(StandardCharsets.UTF_8);
    String what = "AWS KMS " + operation + " with key '" + keyId + "' at " + endpoint;
    return KmsHttp.send(http, what, deadlineNanos, ATTEMPTS, remaining -> {
      AwsSigV4.Signed signed = signedRequest(operation, body, endpoint, region, credentials, Instant.now());
      HttpRequest.Builder builder = HttpRequest.newBuilder(endpoint)
          .timeout(REQUEST_TIMEOUT.compareTo(Duration.ofNanos(remaining)) < 0 ? REQUEST_TIMEOUT
              : Duration.ofNanos(remaining))
          .POST(HttpRequest.BodyPublishers.ofByteArray(body));
      for (String[] h : signed.headers) {
        if (!h[0].equalsIgnoreCase("host")) {
          builder.header(h[0], h[1]);
        }
      }
      return builder.build();
    }, "point " + ENDPOINT_PROPERTY + " at the endpoint that answers", response -> answer(what, keyId, response));
  }

  /** The JSON object of a 200 answer; a failure mapped to its exception, or retried. */
  private static Map<String, Object> answer(String what, String keyId, HttpResponse<String> response)
      throws KmsHttp.Retry {
    int status = response.statusCode();
    if (status == 200) {
      try {
        return KmsHttp.parseObject(response.body());
      } catch (IllegalArgumentException e) {
        throw new ParquetCryptoRuntimeException(what + ": the response is not a JSON object");
      }
    }
    String code = errorCode(response);
    String detail = (code.isEmpty() ? "HTTP " + status : code) + errorMessage(response.body());
    if (DENIED.contains(code) || status == 401 || status == 403) {
      throw new KeyAccessDeniedException(what + ": access denied (" + detail + ")");
    }
    if (DISABLED.contains(code)) {
      throw new KmsKeyDisabledException(what + ": the key is disabled or pending deletion (" + detail
          + "); enable it (or cancel its deletion) in AWS KMS");
    }
    if ("NotFoundException".equals(code)) {
      throw new ParquetCryptoRuntimeException(what + ": the key was not found (" + detail + ")");
    }
    if ("InvalidCiphertextException".equals(code) || "IncorrectKeyException".equals(code)) {
      throw new ParquetCryptoRuntimeException(what + ": the wrapped key does not authenticate under master key '"
          + keyId + "' with its encryption context (" + code + ": wrong master key id, or tampered key material)");
    }
    if (!RETRYABLE.contains(code) && status != 429 && status < 500) {
      throw new ParquetCryptoRuntimeException(what + ": refused (" + detail + ")");
    }
    throw new KmsHttp.Retry(detail);
  }

  /** The AWS error code: the JSON "__type" (after any '#'), else the x-amzn-ErrorType header. */
  private static String errorCode(HttpResponse<String> response) {
    String type = null;
    try {
      Object t = KmsHttp.parseObject(response.body()).get("__type");
      if (t instanceof String) {
        type = (String) t;
      }
    } catch (IllegalArgumentException e) {
      // not JSON
    }
    if (type == null) {
      type = response.headers().firstValue("x-amzn-ErrorType").orElse("");
      int colon = type.indexOf(':');
      type = colon >= 0 ? type.substring(0, colon) : type;
    }
    int hash = type.lastIndexOf('#');
    return hash >= 0 ? type.substring(hash + 1) : type;
  }

  private static String errorMessage(String body) {
    try {
      Map<String, Object> parsed = KmsHttp.parseObject(body);
      Object m = parsed.containsKey("message") ? parsed.get("message") : parsed.get("Message");
      if (m instanceof String && !((String) m).isEmpty()) {
        String text = ((String) m).replaceAll("\\s+", " ");
        return ": " + (text.length() > 200 ? text.substring(0, 200) + "..." : text);
      }
    } catch (IllegalArgumentException e) {
      // not JSON
    }
    return "";
  }

  private static String firstSet(String... values) {
    for (String v : values) {
      if (v != null && !v.trim().isEmpty()) {
        return v.trim();
      }
    }
    return null;
  }
}

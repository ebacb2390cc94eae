package io.securebloom;

import java.nio.charset.StandardCharsets;
import java.security.InvalidKeyException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * AWS Signature Version 4 (header signing, "AWS4-HMAC-SHA256") with the JDK alone: SHA-256 and
 * HMAC-SHA256 from javax.crypto. What AWS documents in "Create a signed AWS API request" and
 * botocore's {@code SigV4Auth} computes:
 *
 * <ol>
 *   <li>canonical request: method, canonical URI (every byte but unreserved characters and '/'
 *       percent-encoded, as for every service but S3), canonical query (names and values encoded,
 *       sorted), canonical headers (names lower-cased and sorted, values trimmed with inner runs of
 *       spaces collapsed, repeated headers joined by ','), signed header names, hex SHA-256 of the
 *       payload;
 *   <li>string to sign: algorithm, X-Amz-Date, scope {@code date/region/service/aws4_request}, hex
 *       SHA-256 of the canonical request;
 *   <li>signing key: HMAC chain from {@code "AWS4" + secret} over date, region, service,
 *       "aws4_request"; the signature is the hex HMAC of the string to sign.
 * </ol>
 *
 * <p>Held against botocore's signer on the same requests and against the AWS SigV4 test suite in
 * tests/interop/test_aws_kms_sigv4.py. Nothing here logs or keeps the secret key.
 */
public final class AwsSigV4 {
  public static final String ALGORITHM = "AWS4-HMAC-SHA256";
  /** The X-Amz-Date format. */
  public static final DateTimeFormatter AMZ_DATE =
      DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'", Locale.ROOT).withZone(ZoneOffset.UTC);

  private static final char[] HEX = "0123456789abcdef".toCharArray();
  /** Headers never signed (hop-by-hop, or changed by proxies and clients): botocore's list. */
  private static final List<String> UNSIGNED = List.of("authorization", "baggage", "connection", "expect",
      "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "traceparent", "tracestate", "trailer",
      "transfer-encoding", "upgrade", "user-agent", "x-amzn-trace-id");

  private AwsSigV4() {}

  /** Credentials: access key id, secret access key, optional session token. Its toString hides the secret. */
  public static final class Credentials {
    final String accessKeyId;
    final String secretAccessKey;
    final String sessionToken;

    public Credentials(String accessKeyId, String secretAccessKey, String sessionToken) {
      if (accessKeyId == null || accessKeyId.isEmpty() || secretAccessKey == null || secretAccessKey.isEmpty()) {
        throw new IllegalArgumentException("AWS credentials need an access key id and a secret access key");
      }
      this.accessKeyId = accessKeyId;
      this.secretAccessKey = secretAccessKey;
      this.sessionToken = sessionToken == null || sessionToken.isEmpty() ? null : sessionToken;
    }

    @Override
    public String toString() {
      return "Credentials(<redacted>)";
    }
  }

  /** The result of signing: the intermediate texts (for tests) and the headers to send. */
  public static final class Signed {
    public final String canonicalRequest;
    public final String stringToSign;
    public final String signature;
    public final String authorization;
    /** The request's headers plus X-Amz-Date, X-Amz-Security-Token (with a session token) and Authorization. */
    public final List<String[]> headers;

    Signed(String canonicalRequest, String stringToSign, String signature, String authorization, List<String[]> headers) {
      this.canonicalRequest = canonicalRequest;
      this.stringToSign = stringToSign;
      this.signature = signature;
      this.authorization = authorization;
      this.headers = Collections.unmodifiableList(headers);
    }
  }

  /**
   * Signs one request.
   *
   * @param method HTTP method
   * @param path the URL path as sent (empty means "/")
   * @param query decoded (name, value) pairs of the query string (may be empty)
   * @param headers (name, value) pairs, Host included; X-Amz-Date is added from {@code time} unless
   *     present, X-Amz-Security-Token when the credentials have a session token
   * @param body the payload bytes
   * @param region e.g. us-east-1
   * @param service e.g. kms
   * @param credentials who signs
   * @param time the signing time
   * @return the signature and the headers to send
   */
  public static Signed sign(String method, String path, List<String[]> query, List<String[]> headers, byte[] body,
      String region, String service, Credentials credentials, Instant time) {
    List<String[]> all = new ArrayList<>(headers);
    String amzDate = header(all, "x-amz-date");
    if (amzDate == null) {
      amzDate = AMZ_DATE.format(time);
      all.add(new String[] {"X-Amz-Date", amzDate});
    }
    if (credentials.sessionToken != null) {
      all.removeIf(h -> h[0].equalsIgnoreCase("x-amz-security-token"));
      all.add(new String[] {"X-Amz-Security-Token", credentials.sessionToken});
    }
    TreeMap<String, List<String>> canonical = new TreeMap<>();
    for (String[] h : all) {
      String name = h[0].toLowerCase(Locale.ROOT);
      if (!UNSIGNED.contains(name)) {
        canonical.computeIfAbsent(name, k -> new ArrayList<>()).add(trimAll(h[1]));
      }
    }
    StringBuilder headerBlock = new StringBuilder();
    for (Map.Entry<String, List<String>> e : canonical.entrySet()) {
      headerBlock.append(e.getKey()).append(':').append(String.join(",", e.getValue())).append('\n');
    }
    String signedHeaders = String.join(";", canonical.keySet());
    String canonicalRequest = method + "\n" + canonicalUri(path) + "\n" + canonicalQuery(query) + "\n"
        + headerBlock + "\n" + signedHeaders + "\n" + hex(sha256(body));
    String date = amzDate.substring(0, 8);
    String scope = date + "/" + region + "/" + service + "/aws4_request";
    String stringToSign = ALGORITHM + "\n" + amzDate + "\n" + scope + "\n"
        + hex(sha256(canonicalRequest.getBytes(StandardCharsets.UTF_8)));
    byte[] key = hmac(("AWS4" + credentials.secretAccessKey).getBytes(StandardCharsets.UTF_8), date);
    key = hmac(key, region);
    key = hmac(key, service);
    key = hmac(key, "aws4_request");
    String signature = hex(hmac(key, stringToSign));
    String authorization = ALGORITHM + " Credential=" + credentials.accessKeyId + "/" + scope
        + ", SignedHeaders=" + signedHeaders + ", Signature=" + signature;
    all.add(new String[] {"Authorization", authorization});
    return new Signed(canonicalRequest, stringToSign, signature, authorization, all);
  }

  private static String header(List<String[]> headers, String lowerName) {
    for (String[] h : headers) {
      if (h[0].equalsIgnoreCase(lowerName)) {
        return h[1];
      }
    }
    return null;
  }

  /** Trimmed, with every run of spaces and tabs inside collapsed to one space. */
  static String trimAll(String value) {
    return value.trim().replaceAll("[ \\t]+", " ");
  }

  static String canonicalUri(String path) {
    return path == null || path.isEmpty() ? "/" : encode(path, true);
  }

  static String canonicalQuery(List<String[]> query) {
    List<String[]> encoded = new ArrayList<>();
    for (String[] p : query) {
      encoded.add(new String[] {encode(p[0], false), encode(p[1] == null ? "" : p[1], false)});
    }
    encoded.sort((a, b) -> a[0].equals(b[0]) ? a[1].compareTo(b[1]) : a[0].compareTo(b[0]));
    StringBuilder out = new StringBuilder();
    for (String[] p : encoded) {
      if (out.length() > 0) {
        out.append('&');
      }
      out.append(p[0]).append('=').append(p[1]);
    }
    return out.toString();
  }

  /** RFC 3986 percent-encoding of the UTF-8 bytes: unreserved characters (and '/' if kept) stay. */
  static String encode(String text, boolean keepSlash) {
    StringBuilder out = new StringBuilder();
    for (byte b : text.getBytes(StandardCharsets.UTF_8)) {
      char c = (char) (b & 0xff);
      if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
          || c == '-' || c == '_' || c == '.' || c == '~' || (keepSlash && c == '/')) {
        out.append(c);
      } else {
        out.append('%').append(Character.toUpperCase(HEX[(b >> 4) & 0xf])).append(Character.toUpperCase(HEX[b & 0xf]));
      }
    }
    return out.toString();
  }

  static byte[] sha256(byte[] data) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(data);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is not available", e);
    }
  }

  static byte[] hmac(byte[] key, String data) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      return mac.doFinal(data.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException | InvalidKeyException e) {
      throw new IllegalStateException("HmacSHA256 is not available", e);
    }
  }

  static String hex(byte[] bytes) {
    char[] out = new char[bytes.length * 2];
    for (int i = 0; i < bytes.length; i++) {
      out[2 * i] = HEX[(bytes[i] >> 4) & 0xf];
      out[2 * i + 1] = HEX[bytes[i] & 0xf];
    }
    return new String(out);
  }
}

package io.securebloom;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import shaded.parquet.com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Signs requests with {@link AwsSigV4} (the production signer) so tests can compare every step
 * with botocore's SigV4Auth and with the AWS SigV4 test suite.
 *
 * <pre>
 * SigV4Tool sign   &lt; {"cases": [{"method", "path", "query": [[n, v]...], "headers": [[n, v]...],
 *                       "body_b64", "region", "service", "access_key", "secret_key", "token",
 *                       "epoch_seconds"}...]}
 * SigV4Tool kms    &lt; {"cases": [{"operation": "Encrypt"|"Decrypt", "master_key_id", "key_b64" | "wrapped",
 *                       "endpoint", "region", "access_key", "secret_key", "token", "epoch_seconds"}...]}
 * </pre>
 *
 * "sign" signs the request given; "kms" builds the request AwsKmsClient sends (its JSON body and
 * headers) and signs it. Both print {"results": [{"canonical_request", "string_to_sign",
 * "signature", "authorization", "headers", "body_b64"}...]} (test credentials only).
 */
public final class SigV4Tool {
  private SigV4Tool() {}

  public static void main(String[] args) {
    Cli.runMain(args, SigV4Tool::run);
  }

  @SuppressWarnings("unchecked")
  static Map<String, Object> run(String[] args) throws Exception {
    if (args.length != 1 || !("sign".equals(args[0]) || "kms".equals(args[0]))) {
      throw new Cli.UsageException("usage: SigV4Tool sign|kms < cases.json");
    }
    Map<String, Object> input = new ObjectMapper().readValue(readAll(System.in), Map.class);
    List<Map<String, Object>> results = new ArrayList<>();
    for (Map<String, Object> c : (List<Map<String, Object>>) input.get("cases")) {
      AwsSigV4.Credentials credentials = new AwsSigV4.Credentials(
          (String) c.get("access_key"), (String) c.get("secret_key"), (String) c.get("token"));
      Instant time = Instant.ofEpochSecond(((Number) c.get("epoch_seconds")).longValue());
      AwsSigV4.Signed signed;
      byte[] body;
      if ("sign".equals(args[0])) {
        body = Base64.getDecoder().decode((String) c.get("body_b64"));
        signed = AwsSigV4.sign((String) c.get("method"), (String) c.get("path"), pairs(c.get("query")),
            pairs(c.get("headers")), body, (String) c.get("region"), (String) c.get("service"), credentials, time);
      } else {
        String operation = (String) c.get("operation");
        String masterKeyId = (String) c.get("master_key_id");
        String json = "Encrypt".equals(operation)
            ? AwsKmsClient.encryptBody(Base64.getDecoder().decode((String) c.get("key_b64")), masterKeyId)
            : AwsKmsClient.decryptBody((String) c.get("wrapped"), masterKeyId);
        body = json.getBytes(StandardCharsets.UTF_8);
        URI endpoint = URI.create(((String) c.get("endpoint")).replaceAll("/+$", "") + "/");
        signed = AwsKmsClient.signedRequest(operation, body, endpoint, (String) c.get("region"), credentials, time);
      }
      Map<String, Object> out = new LinkedHashMap<>();
      out.put("canonical_request", signed.canonicalRequest);
      out.put("string_to_sign", signed.stringToSign);
      out.put("signature", signed.signature);
      out.put("authorization", signed.authorization);
      out.put("headers", signed.headers);
      out.put("body_b64", Base64.getEncoder().encodeToString(body));
      results.add(out);
    }
    Map<String, Object> result = new LinkedHashMap<>();
    result.put("results", results);
    return result;
  }

  @SuppressWarnings("unchecked")
  private static List<String[]> pairs(Object value) {
    List<String[]> out = new ArrayList<>();
    if (value != null) {
      for (List<String> p : (List<List<String>>) value) {
        out.add(new String[] {p.get(0), p.get(1)});
      }
    }
    return out;
  }

  private static String readAll(InputStream in) throws java.io.IOException {
    ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    in.transferTo(buffer);
    return buffer.toString(StandardCharsets.UTF_8);
  }
}

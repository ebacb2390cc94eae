package io.securebloom;

import java.util.Arrays;
import java.util.Base64;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.crypto.keytools.KmsClient;

/**
 * Calls a KmsClient's wrapKey / unwrapKey once, so tests can check that keys wrapped on the JVM
 * unwrap in Python and the other way round.
 *
 * <pre>
 * KmsTool wrap   --client CLASS --master-key-id ID [--conf k=v]... [--conf-stdin]
 * KmsTool unwrap --client CLASS --master-key-id ID --wrapped W [--conf k=v]... [--conf-stdin]
 * </pre>
 *
 * The client is initialised with the Hadoop properties given, using parquet.encryption.kms.instance.id,
 * parquet.encryption.kms.instance.url and parquet.encryption.key.access.token (defaults "DEFAULT") as
 * parquet-java's key tools do. wrap takes the key to wrap, base64, from the property
 * {@code secure_bloom.kmstool.key} (give it on --conf-stdin) and prints {"wrapped": W}; unwrap prints
 * {"key_length": n, "key_sha256": hex}, never the key itself.
 */
public final class KmsTool {
  /** Hadoop property holding the base64 key that "wrap" wraps. */
  public static final String KEY_PROPERTY = "secure_bloom.kmstool.key";

  private KmsTool() {}

  public static void main(String[] args) {
    Cli.runMain(args, KmsTool::run);
  }

  static Map<String, Object> run(String[] args) throws Exception {
    String op = null;
    String clientClass = null;
    String masterKeyId = null;
    String wrapped = null;
    Map<String, String> props = new LinkedHashMap<>();
    for (String[] p : Cli.pairs(args, new HashSet<>(Arrays.asList("--conf-stdin")))) {
      switch (p[0]) {
        case "":
          op = p[1];
          break;
        case "--client":
          clientClass = p[1];
          break;
        case "--master-key-id":
          masterKeyId = p[1];
          break;
        case "--wrapped":
          wrapped = p[1];
          break;
        default:
          Cli.hadoopOption(p, props);
      }
    }
    if (!"wrap".equals(op) && !"unwrap".equals(op)) {
      throw new Cli.UsageException("first argument must be wrap or unwrap");
    }
    if (clientClass == null || masterKeyId == null) {
      throw new Cli.UsageException("--client and --master-key-id are required");
    }
    Configuration conf = new Configuration(false);
    props.forEach(conf::set);
    KmsClient client =
        (KmsClient) Class.forName(clientClass).getDeclaredConstructor().newInstance();
    client.initialize(
        conf,
        conf.getTrimmed("parquet.encryption.kms.instance.id", KmsClient.KMS_INSTANCE_ID_DEFAULT),
        conf.getTrimmed("parquet.encryption.kms.instance.url", KmsClient.KMS_INSTANCE_URL_DEFAULT),
        conf.getTrimmed("parquet.encryption.key.access.token", KmsClient.KEY_ACCESS_TOKEN_DEFAULT));
    Map<String, Object> out = new LinkedHashMap<>();
    if ("wrap".equals(op)) {
      String key = conf.getTrimmed(KEY_PROPERTY);
      if (key == null) {
        throw new Cli.UsageException("wrap needs the property " + KEY_PROPERTY);
      }
      out.put("wrapped", client.wrapKey(Base64.getDecoder().decode(key), masterKeyId));
    } else {
      if (wrapped == null) {
        throw new Cli.UsageException("unwrap needs --wrapped");
      }
      byte[] key = client.unwrapKey(wrapped, masterKeyId);
      out.put("key_length", key.length);
      out.put("key_sha256", Cli.sha256Hex(key));
    }
    return out;
  }
}

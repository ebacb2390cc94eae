package io.securebloom;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.HadoopReadOptions;
import org.apache.parquet.ParquetReadOptions;
import org.apache.parquet.crypto.DecryptionKeyRetriever;
import org.apache.parquet.crypto.DecryptionPropertiesFactory;
import org.apache.parquet.crypto.FileDecryptionProperties;
import org.apache.parquet.crypto.KeyAccessDeniedException;
import org.apache.parquet.column.values.bloomfilter.BlockSplitBloomFilter;
import org.apache.parquet.column.values.bloomfilter.BloomFilter;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.ColumnPath;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;

/**
 * parquet-java reading the Bloom filters of a Parquet file through its own decryption: the
 * reference answer our Python reader is checked against.
 *
 * <pre>
 * BloomProbe FILE [--conf k=v]... [--conf-stdin]
 *            [--column a.b [--value-type T] [--value V]...]... [--all-columns]
 *            [--hashes] [--bitset-sha256]
 * BloomProbe --hash-only --value-type T --value V...
 * </pre>
 *
 * T is int32, int64, float, double, string (UTF-8) or binary-hex; values are hashed with the
 * filter's own hash (XXH64 over the plain encoding) and checked with findHash. The file is opened
 * with ParquetFileReader; decryption properties come from the crypto factory named by
 * parquet.crypto.factory.class (e.g. PropertiesDrivenCryptoFactory with a KMS client), or, for files
 * written with explicit keys whose key metadata is a key id, from
 * {@code secure_bloom.probe.explicit.keys} = "id:base64key, ..." (plus optional
 * {@code secure_bloom.probe.aad.prefix}, UTF-8). Secrets belong on --conf-stdin.
 *
 * <p>Prints one JSON object on stdout:
 * {"file", "encryption" (UNENCRYPTED|PLAINTEXT_FOOTER|ENCRYPTED_FOOTER), "num_row_groups",
 * "columns": {path: {"physical_type", "encrypted", "hashes"?: {V: "0x16 hex digits"},
 * "row_groups": [{"row_group", "num_rows", "has_bloom_filter", "bloom_filter_offset",
 * "bloom_filter_length", "num_bytes"?, "bitset_sha256"?, "found": {V: true|false|null}}]}}} and,
 * when exactly one column is probed, that column's "row_groups" again at the top level.
 * "found" is null where the chunk has no filter (parquet-java would read every row). A chunk whose
 * metadata points at a filter that parquet-java cannot read is an error (exit 1), not "no filter".
 * Errors: one JSON line on stderr, exit 2 for usage, 1 otherwise.
 */
public final class BloomProbe {
  /** Hadoop property: explicit "id:base64key, ..." keys for files with key-id key metadata. */
  public static final String EXPLICIT_KEYS_PROPERTY = "secure_bloom.probe.explicit.keys";
  /** Hadoop property: the AAD prefix (UTF-8) for files written with one but not storing it. */
  public static final String AAD_PREFIX_PROPERTY = "secure_bloom.probe.aad.prefix";

  private BloomProbe() {}

  /** One --column request. */
  private static final class Probe {
    final String column;
    String valueType;
    final List<String> values = new ArrayList<>();

    Probe(String column) {
      this.column = column;
    }
  }

  public static void main(String[] args) {
    Cli.runMain(args, BloomProbe::run);
  }

  static Map<String, Object> run(String[] args) throws Exception {
    String file = null;
    Map<String, String> props = new LinkedHashMap<>();
    List<Probe> probes = new ArrayList<>();
    String pendingType = null;
    boolean hashes = false;
    boolean sha = false;
    boolean hashOnly = false;
    boolean allColumns = false;
    List<String[]> pairs =
        Cli.pairs(
            args,
            new HashSet<>(
                Arrays.asList(
                    "--conf-stdin", "--hashes", "--bitset-sha256", "--hash-only", "--all-columns")));
    for (String[] p : pairs) {
      switch (p[0]) {
        case "":
          file = Cli.onlyFile(file, p[1]);
          break;
        case "--column":
          probes.add(new Probe(p[1]));
          break;
        case "--value-type":
          if (probes.isEmpty()) {
            pendingType = checkType(p[1]);
          } else if (last(probes).valueType != null) {
            throw new Cli.UsageException("--value-type given twice for one --column");
          } else {
            last(probes).valueType = checkType(p[1]);
          }
          break;
        case "--value":
          if (probes.isEmpty()) {
            probes.add(new Probe(null)); // --hash-only values; an error otherwise
          }
          last(probes).values.add(p[1]);
          break;
        case "--hashes":
          hashes = true;
          break;
        case "--bitset-sha256":
          sha = true;
          break;
        case "--hash-only":
          hashOnly = true;
          break;
        case "--all-columns":
          allColumns = true;
          break;
        default:
          Cli.hadoopOption(p, props);
      }
    }
    for (Probe probe : probes) {
      if (probe.valueType == null) {
        probe.valueType = pendingType;
      }
      if (!probe.values.isEmpty() && probe.valueType == null) {
        throw new Cli.UsageException("values for column " + probe.column + " need --value-type");
      }
    }
    if (hashOnly) {
      return hashOnly(probes);
    }
    if (probes.stream().anyMatch(p -> p.column == null)) {
      throw new Cli.UsageException("--value before any --column");
    }
    if (file == null) {
      throw new Cli.UsageException("no Parquet file given");
    }
    return probeFile(file, props, probes, allColumns, hashes, sha);
  }

  private static Probe last(List<Probe> probes) {
    return probes.get(probes.size() - 1);
  }

  private static String checkType(String t) {
    switch (t) {
      case "int32":
      case "int64":
      case "float":
      case "double":
      case "string":
      case "binary-hex":
        return t;
      default:
        throw new Cli.UsageException(
            "--value-type must be int32, int64, float, double, string or binary-hex, not " + t);
    }
  }

  private static Map<String, Object> hashOnly(List<Probe> probes) {
    BlockSplitBloomFilter bf = new BlockSplitBloomFilter(BlockSplitBloomFilter.LOWER_BOUND_BYTES);
    Map<String, Object> hashes = new LinkedHashMap<>();
    for (Probe probe : probes) {
      for (String v : probe.values) {
        hashes.put(v, hex(hash(bf, probe.valueType, v)));
      }
    }
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("hashes", hashes);
    return out;
  }

  private static String hex(long h) {
    return String.format("0x%016x", h);
  }

  /** The filter's hash of {@code value} read as {@code type}. */
  static long hash(BloomFilter bf, String type, String value) {
    try {
      switch (type) {
        case "int32":
          return bf.hash(Integer.parseInt(value));
        case "int64":
          return bf.hash(Long.parseLong(value));
        case "float":
          return bf.hash(Float.parseFloat(value));
        case "double":
          return bf.hash(Double.parseDouble(value));
        case "string":
          return bf.hash(Binary.fromString(value));
        case "binary-hex":
          return bf.hash(Binary.fromConstantByteArray(unhex(value)));
        default:
          throw new Cli.UsageException("unknown value type " + type);
      }
    } catch (NumberFormatException e) {
      throw new Cli.UsageException("value '" + value + "' is not a valid " + type);
    }
  }

  private static byte[] unhex(String s) {
    if (s.length() % 2 != 0) {
      throw new NumberFormatException("odd number of hex digits");
    }
    byte[] out = new byte[s.length() / 2];
    for (int i = 0; i < out.length; i++) {
      int hi = Character.digit(s.charAt(2 * i), 16);
      int lo = Character.digit(s.charAt(2 * i + 1), 16);
      if (hi < 0 || lo < 0) {
        throw new NumberFormatException("not hex");
      }
      out[i] = (byte) ((hi << 4) | lo);
    }
    return out;
  }

  /** Whether values of {@code type} can be stored in a column of physical type {@code t}. */
  private static boolean typeFits(String type, PrimitiveTypeName t) {
    switch (type) {
      case "int32":
        return t == PrimitiveTypeName.INT32;
      case "int64":
        return t == PrimitiveTypeName.INT64;
      case "float":
        return t == PrimitiveTypeName.FLOAT;
      case "double":
        return t == PrimitiveTypeName.DOUBLE;
      case "string":
        return t == PrimitiveTypeName.BINARY || t == PrimitiveTypeName.FIXED_LEN_BYTE_ARRAY;
      default:
        return t == PrimitiveTypeName.BINARY
            || t == PrimitiveTypeName.FIXED_LEN_BYTE_ARRAY
            || t == PrimitiveTypeName.INT96;
    }
  }

  /** Decryption properties for {@code path} from the Hadoop properties (null: a plaintext file). */
  static FileDecryptionProperties decryption(Configuration conf, Path path) {
    String explicit = conf.getTrimmed(EXPLICIT_KEYS_PROPERTY);
    if (explicit != null && !explicit.isEmpty()) {
      Map<String, byte[]> keys = KeyListKmsClient.parseKeyList(explicit);
      DecryptionKeyRetriever retriever =
          keyMetadata -> {
            String id = new String(keyMetadata, StandardCharsets.UTF_8);
            byte[] key = keys.get(id);
            if (key == null) {
              throw new KeyAccessDeniedException("No explicit key for key id '" + id + "'");
            }
            return key;
          };
      FileDecryptionProperties.Builder b =
          FileDecryptionProperties.builder().withKeyRetriever(retriever).withPlaintextFilesAllowed();
      String aad = conf.get(AAD_PREFIX_PROPERTY);
      if (aad != null) {
        b.withAADPrefix(aad.getBytes(StandardCharsets.UTF_8));
      }
      return b.build();
    }
    if (conf.get(DecryptionPropertiesFactory.CRYPTO_FACTORY_CLASS_PROPERTY_NAME) == null) {
      return null;
    }
    DecryptionPropertiesFactory factory = DecryptionPropertiesFactory.loadFactory(conf);
    return factory == null ? null : factory.getFileDecryptionProperties(conf, path);
  }

  private static Map<String, Object> probeFile(
      String file,
      Map<String, String> props,
      List<Probe> probes,
      boolean allColumns,
      boolean hashes,
      boolean sha)
      throws Exception {
    Configuration conf = new Configuration();
    props.forEach(conf::set);
    Path path = new Path(file);
    ParquetReadOptions options =
        HadoopReadOptions.builder(conf).withDecryption(decryption(conf, path)).build();
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("file", file);
    try (ParquetFileReader reader =
        ParquetFileReader.open(HadoopInputFile.fromPath(path, conf), options)) {
      List<BlockMetaData> blocks = reader.getRowGroups();
      out.put("encryption", reader.getFooter().getFileMetaData().getEncryptionType().name());
      out.put("num_row_groups", blocks.size());
      List<Probe> all = new ArrayList<>(probes);
      if (allColumns) {
        for (String[] columnPath : reader.getFooter().getFileMetaData().getSchema().getPaths()) {
          String dotted = String.join(".", columnPath);
          if (probes.stream().noneMatch(p -> dotted.equals(p.column))) {
            all.add(new Probe(dotted));
          }
        }
      }
      Map<String, Object> columns = new LinkedHashMap<>();
      for (Probe probe : all) {
        columns.put(probe.column, probeColumn(reader, blocks, probe, hashes, sha));
      }
      out.put("columns", columns);
      if (all.size() == 1) {
        @SuppressWarnings("unchecked")
        Map<String, Object> only = (Map<String, Object>) columns.values().iterator().next();
        out.put("row_groups", only.get("row_groups"));
      }
    }
    return out;
  }

  private static Map<String, Object> probeColumn(
      ParquetFileReader reader, List<BlockMetaData> blocks, Probe probe, boolean hashes, boolean sha)
      throws Exception {
    ColumnPath path = ColumnPath.fromDotString(probe.column);
    Map<String, Object> col = new LinkedHashMap<>();
    Map<String, Object> hashOut = new LinkedHashMap<>();
    List<Object> rowGroups = new ArrayList<>();
    for (int i = 0; i < blocks.size(); i++) {
      BlockMetaData block = blocks.get(i);
      ColumnChunkMetaData meta = null;
      for (ColumnChunkMetaData c : block.getColumns()) {
        if (c.getPath().equals(path)) {
          meta = c;
        }
      }
      if (meta == null) {
        List<String> names = new ArrayList<>();
        block.getColumns().forEach(c -> names.add(c.getPath().toDotString()));
        throw new IllegalArgumentException(
            "column '" + probe.column + "' not in row group " + i + "; columns: " + names);
      }
      PrimitiveTypeName type = meta.getPrimitiveType().getPrimitiveTypeName();
      if (i == 0) {
        col.put("physical_type", type.name());
        col.put("encrypted", meta.isEncrypted());
        if (probe.valueType != null && !typeFits(probe.valueType, type)) {
          throw new Cli.UsageException(
              "value type " + probe.valueType + " does not fit column " + probe.column + " of type " + type);
        }
      }
      Map<String, Object> rg = new LinkedHashMap<>();
      rg.put("row_group", i);
      rg.put("num_rows", block.getRowCount());
      long offset = meta.getBloomFilterOffset();
      rg.put("bloom_filter_offset", offset);
      rg.put("bloom_filter_length", meta.getBloomFilterLength());
      BloomFilter bf = reader.readBloomFilter(meta);
      if (offset >= 0 && bf == null) {
        throw new IllegalStateException(
            "parquet-java could not read the Bloom filter of column '"
                + probe.column + "' in row group " + i + " at offset " + offset);
      }
      rg.put("has_bloom_filter", bf != null);
      if (bf != null) {
        rg.put("num_bytes", bf.getBitsetSize());
        if (sha) {
          ByteArrayOutputStream bits = new ByteArrayOutputStream();
          bf.writeTo(bits);
          rg.put("bitset_sha256", Cli.sha256Hex(bits.toByteArray()));
        }
      }
      Map<String, Object> found = new LinkedHashMap<>();
      BloomFilter hasher = bf != null ? bf : new BlockSplitBloomFilter(BlockSplitBloomFilter.LOWER_BOUND_BYTES);
      for (String v : probe.values) {
        long h = hash(hasher, probe.valueType, v);
        found.put(v, bf == null ? null : bf.findHash(h));
        if (hashes) {
          hashOut.put(v, hex(h));
        }
      }
      rg.put("found", found);
      rowGroups.add(rg);
    }
    if (hashes) {
      col.put("hashes", hashOut);
    }
    col.put("row_groups", rowGroups);
    return col;
  }
}

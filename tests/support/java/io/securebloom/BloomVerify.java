package io.securebloom;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.HadoopReadOptions;
import org.apache.parquet.ParquetReadOptions;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.ColumnReader;
import org.apache.parquet.column.impl.ColumnReadStoreImpl;
import org.apache.parquet.column.page.PageReadStore;
import org.apache.parquet.column.values.bloomfilter.BloomFilter;
import org.apache.parquet.example.DummyRecordConverter;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.ColumnPath;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.PrimitiveType;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;

/**
 * parquet-java checks a file's Bloom filters against the values it reads from the data pages: for
 * every row group and column, the column's values are read as stored (ColumnReader over the
 * decrypted pages), hashed with parquet-java's own {@code BloomFilter.hash}, and looked up with
 * {@code findHash} in the filter read by {@code ParquetFileReader.readBloomFilter}. Nothing here
 * depends on how the filter's writer converted values: the stored values are the ground truth.
 *
 * <pre>
 * BloomVerify FILE [--conf k=v]... [--conf-stdin] [--column a.b]... [--list-values]
 * </pre>
 *
 * Decryption as in {@link BloomProbe} (crypto factory or explicit keys). Without --column every
 * non-BOOLEAN leaf column is checked. Prints one JSON object:
 * {"file", "num_row_groups", "columns": {path: {"physical_type", "type" (the leaf's schema text),
 * "row_groups": [{"row_group", "num_values" (non-null), "num_distinct", "has_bloom_filter",
 * "num_bytes"?, "missing" (distinct values findHash did not find), "missing_values" (up to 20, hex of
 * the plain encoding), "values"? (with --list-values: every distinct value, hex, in stored order)}]}}}.
 * A chunk without a filter reports has_bloom_filter false and missing 0. Errors: one JSON line on
 * stderr, exit 2 for usage, 1 otherwise.
 */
public final class BloomVerify {
  private static final int MAX_REPORTED = 20;

  private BloomVerify() {}

  public static void main(String[] args) {
    Cli.runMain(args, BloomVerify::run);
  }

  static Map<String, Object> run(String[] args) throws Exception {
    String file = null;
    Map<String, String> props = new LinkedHashMap<>();
    Set<String> columns = new LinkedHashSet<>();
    boolean listValues = false;
    for (String[] p : Cli.pairs(args, new HashSet<>(Arrays.asList("--conf-stdin", "--list-values")))) {
      switch (p[0]) {
        case "":
          file = Cli.onlyFile(file, p[1]);
          break;
        case "--column":
          columns.add(p[1]);
          break;
        case "--list-values":
          listValues = true;
          break;
        default:
          Cli.hadoopOption(p, props);
      }
    }
    if (file == null) {
      throw new Cli.UsageException("no Parquet file given");
    }
    return verify(file, props, columns, listValues);
  }

  private static Map<String, Object> verify(
      String file, Map<String, String> props, Set<String> wanted, boolean listValues) throws Exception {
    Configuration conf = new Configuration();
    props.forEach(conf::set);
    Path path = new Path(file);
    ParquetReadOptions options =
        HadoopReadOptions.builder(conf).withDecryption(BloomProbe.decryption(conf, path)).build();
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("file", file);
    try (ParquetFileReader reader =
        ParquetFileReader.open(HadoopInputFile.fromPath(path, conf), options)) {
      MessageType schema = reader.getFooter().getFileMetaData().getSchema();
      List<ColumnDescriptor> selected = new ArrayList<>();
      Set<String> unknown = new LinkedHashSet<>(wanted);
      for (ColumnDescriptor d : schema.getColumns()) {
        String dotted = String.join(".", d.getPath());
        unknown.remove(dotted);
        boolean isBoolean = d.getPrimitiveType().getPrimitiveTypeName() == PrimitiveTypeName.BOOLEAN;
        if (wanted.isEmpty() ? !isBoolean : wanted.contains(dotted)) {
          selected.add(d);
        }
      }
      if (!unknown.isEmpty()) {
        throw new Cli.UsageException("no such column(s) " + unknown + " in " + file);
      }
      reader.setRequestedSchema(selected);
      List<BlockMetaData> blocks = reader.getRowGroups();
      out.put("num_row_groups", blocks.size());
      String createdBy = reader.getFooter().getFileMetaData().getCreatedBy();
      Map<String, List<Object>> perColumn = new LinkedHashMap<>();
      Map<String, Object> columnsOut = new LinkedHashMap<>();
      for (ColumnDescriptor d : selected) {
        String dotted = String.join(".", d.getPath());
        Map<String, Object> col = new LinkedHashMap<>();
        col.put("physical_type", d.getPrimitiveType().getPrimitiveTypeName().name());
        col.put("type", d.getPrimitiveType().toString());
        List<Object> groups = new ArrayList<>();
        col.put("row_groups", groups);
        columnsOut.put(dotted, col);
        perColumn.put(dotted, groups);
      }
      for (int g = 0; g < blocks.size(); g++) {
        PageReadStore pages = reader.readNextRowGroup();
        if (pages == null) {
          throw new IllegalStateException("row group " + g + " could not be read");
        }
        ColumnReadStoreImpl store =
            new ColumnReadStoreImpl(
                pages, new DummyRecordConverter(schema).getRootConverter(), schema, createdBy);
        for (ColumnDescriptor d : selected) {
          String dotted = String.join(".", d.getPath());
          ColumnChunkMetaData meta = chunk(blocks.get(g), dotted);
          perColumn.get(dotted).add(checkChunk(reader, meta, store.getColumnReader(d), g, listValues));
        }
      }
      out.put("columns", columnsOut);
    }
    return out;
  }

  private static ColumnChunkMetaData chunk(BlockMetaData block, String dotted) {
    ColumnPath path = ColumnPath.fromDotString(dotted);
    for (ColumnChunkMetaData c : block.getColumns()) {
      if (c.getPath().equals(path)) {
        return c;
      }
    }
    throw new IllegalStateException("column '" + dotted + "' has no chunk in a row group");
  }

  private static Map<String, Object> checkChunk(
      ParquetFileReader reader, ColumnChunkMetaData meta, ColumnReader cr, int g, boolean listValues)
      throws Exception {
    BloomFilter bf = reader.readBloomFilter(meta);
    if (meta.getBloomFilterOffset() >= 0 && bf == null) {
      throw new IllegalStateException(
          "parquet-java could not read the Bloom filter of column '"
              + meta.getPath().toDotString() + "' in row group " + g);
    }
    PrimitiveType type = cr.getDescriptor().getPrimitiveType();
    int maxDef = cr.getDescriptor().getMaxDefinitionLevel();
    long total = cr.getTotalValueCount();
    long nonNull = 0;
    Map<String, Long> distinct = new LinkedHashMap<>(); // plain-encoding hex -> hash
    BloomFilter hasher =
        bf != null
            ? bf
            : new org.apache.parquet.column.values.bloomfilter.BlockSplitBloomFilter(32);
    for (long i = 0; i < total; i++) {
      if (cr.getCurrentDefinitionLevel() == maxDef) {
        nonNull++;
        Object[] plainAndHash = read(cr, type.getPrimitiveTypeName(), hasher);
        distinct.putIfAbsent((String) plainAndHash[0], (Long) plainAndHash[1]);
      }
      cr.consume();
    }
    Map<String, Object> rg = new LinkedHashMap<>();
    rg.put("row_group", g);
    rg.put("num_values", nonNull);
    rg.put("num_distinct", distinct.size());
    rg.put("has_bloom_filter", bf != null);
    List<Object> missingValues = new ArrayList<>();
    long missing = 0;
    if (bf != null) {
      rg.put("num_bytes", bf.getBitsetSize());
      for (Map.Entry<String, Long> e : distinct.entrySet()) {
        if (!bf.findHash(e.getValue())) {
          missing++;
          if (missingValues.size() < MAX_REPORTED) {
            missingValues.add(e.getKey());
          }
        }
      }
    }
    rg.put("missing", missing);
    rg.put("missing_values", missingValues);
    if (listValues) {
      rg.put("values", new ArrayList<Object>(distinct.keySet()));
    }
    return rg;
  }

  /** The current value's plain encoding (hex) and parquet-java's hash of the value as read. */
  private static Object[] read(ColumnReader cr, PrimitiveTypeName t, BloomFilter bf) {
    switch (t) {
      case INT32:
        {
          int v = cr.getInteger();
          return new Object[] {leHex(v & 0xffffffffL, 4), bf.hash(v)};
        }
      case INT64:
        {
          long v = cr.getLong();
          return new Object[] {leHex(v, 8), bf.hash(v)};
        }
      case FLOAT:
        {
          float v = cr.getFloat();
          return new Object[] {leHex(Float.floatToRawIntBits(v) & 0xffffffffL, 4), bf.hash(v)};
        }
      case DOUBLE:
        {
          double v = cr.getDouble();
          return new Object[] {leHex(Double.doubleToRawLongBits(v), 8), bf.hash(v)};
        }
      case BINARY:
      case FIXED_LEN_BYTE_ARRAY:
      case INT96:
        {
          org.apache.parquet.io.api.Binary v = cr.getBinary();
          return new Object[] {hex(v.getBytes()), bf.hash(v)};
        }
      default:
        throw new IllegalArgumentException("no Bloom filter hash for " + t + " values");
    }
  }

  private static String leHex(long v, int bytes) {
    byte[] b = new byte[bytes];
    for (int i = 0; i < bytes; i++) {
      b[i] = (byte) (v >>> (8 * i));
    }
    return hex(b);
  }

  private static String hex(byte[] data) {
    StringBuilder sb = new StringBuilder(data.length * 2);
    for (byte b : data) {
      sb.append(Character.forDigit((b >> 4) & 0xf, 16)).append(Character.forDigit(b & 0xf, 16));
    }
    return sb.toString();
  }
}

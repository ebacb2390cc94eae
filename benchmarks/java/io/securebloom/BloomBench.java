package io.securebloom;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.parquet.Version;
import org.apache.parquet.column.values.bloomfilter.BlockSplitBloomFilter;
import org.apache.parquet.io.api.Binary;

/**
 * Times parquet-java's BlockSplitBloomFilter on the workload of the Python benchmark.
 *
 * <pre>
 * BloomBench --kind int64|string --values-file F [--n N] [--bytes B] [--warmup W] [--reps R]
 * </pre>
 *
 * Values file (written by the Python side): for int64, N little-endian int64 values back to back; for
 * string, N records of (uint32 little-endian byte length, UTF-8 bytes). --n defaults to all values
 * in the file and may not exceed them; --bytes is the filter size (default 1 MiB, rounded and
 * clamped by parquet-java as for its writers).
 *
 * <p>Phases, each timed over all N values on a fresh filter, W untimed warm-up rounds then R timed
 * ones: "hash" (filter.hash(long|Binary) into an array), "insert" (insertHash of those hashes),
 * "hash_insert" (both in one loop: what a writer does), "check" (findHash of precomputed hashes)
 * and "hash_check" (hash then findHash: what a reader probing values does). String values are
 * decoded into Binary objects once, before timing. Prints one JSON line: ns/value per phase (median
 * and best of R), the filter size used, and "found" / "found_hash_check": how many of the N values
 * the filled filter reports present (always N for a correct filter; proves the work was done).
 */
public final class BloomBench {
  private BloomBench() {}

  public static void main(String[] args) {
    Cli.runMain(args, BloomBench::run);
  }

  static Map<String, Object> run(String[] args) throws IOException {
    String kind = null;
    String valuesFile = null;
    long n = -1;
    int bytes = 1 << 20;
    int warmup = 3;
    int reps = 5;
    for (String[] p : Cli.pairs(args, new HashSet<>())) {
      try {
        switch (p[0]) {
          case "--kind":
            kind = p[1];
            break;
          case "--values-file":
            valuesFile = p[1];
            break;
          case "--n":
            n = Long.parseLong(p[1]);
            break;
          case "--bytes":
            bytes = Integer.parseInt(p[1]);
            break;
          case "--warmup":
            warmup = Integer.parseInt(p[1]);
            break;
          case "--reps":
            reps = Integer.parseInt(p[1]);
            break;
          default:
            throw new Cli.UsageException("unknown argument " + (p[0].isEmpty() ? p[1] : p[0]));
        }
      } catch (NumberFormatException e) {
        throw new Cli.UsageException(p[0] + " needs a number, not " + p[1]);
      }
    }
    if (!"int64".equals(kind) && !"string".equals(kind)) {
      throw new Cli.UsageException("--kind must be int64 or string");
    }
    if (valuesFile == null) {
      throw new Cli.UsageException("--values-file is required");
    }
    if (reps < 1 || warmup < 0 || bytes < 0) {
      throw new Cli.UsageException("--reps must be >= 1, --warmup and --bytes >= 0");
    }
    ByteBuffer buf = ByteBuffer.wrap(Files.readAllBytes(Paths.get(valuesFile))).order(ByteOrder.LITTLE_ENDIAN);
    Workload w = "int64".equals(kind) ? new LongWorkload(buf, n) : new BinaryWorkload(buf, n);

    long[][] times = new long[5][reps];
    long found = -1;
    long foundHashCheck = -1;
    long[] hashes = new long[w.size()];
    for (int round = 0; round < warmup + reps; round++) {
      int r = round - warmup;
      BlockSplitBloomFilter f1 = new BlockSplitBloomFilter(bytes);
      long t0 = System.nanoTime();
      w.hashInto(f1, hashes);
      long t1 = System.nanoTime();
      for (long h : hashes) {
        f1.insertHash(h);
      }
      long t2 = System.nanoTime();
      BlockSplitBloomFilter f2 = new BlockSplitBloomFilter(bytes);
      long t3 = System.nanoTime();
      w.hashInsert(f2);
      long t4 = System.nanoTime();
      long hits = 0;
      for (long h : hashes) {
        if (f1.findHash(h)) {
          hits++;
        }
      }
      long t5 = System.nanoTime();
      long hits2 = w.hashCheck(f2);
      long t6 = System.nanoTime();
      if (r >= 0) {
        times[0][r] = t1 - t0;
        times[1][r] = t2 - t1;
        times[2][r] = t4 - t3;
        times[3][r] = t5 - t4;
        times[4][r] = t6 - t5;
        found = hits;
        foundHashCheck = hits2;
      }
    }
    String[] phases = {"hash", "insert", "hash_insert", "check", "hash_check"};
    Map<String, Object> median = new LinkedHashMap<>();
    Map<String, Object> best = new LinkedHashMap<>();
    for (int i = 0; i < phases.length; i++) {
      long[] t = times[i].clone();
      Arrays.sort(t);
      double med = reps % 2 == 1 ? t[reps / 2] : (t[reps / 2 - 1] + t[reps / 2]) / 2.0;
      median.put(phases[i], med / w.size());
      best.put(phases[i], (double) t[0] / w.size());
    }
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("impl", "parquet-java");
    out.put("parquet_version", Version.VERSION_NUMBER);
    out.put("java_version", System.getProperty("java.version"));
    out.put("kind", kind);
    out.put("n", w.size());
    out.put("requested_bytes", bytes);
    out.put("num_bytes", new BlockSplitBloomFilter(bytes).getBitsetSize());
    out.put("warmup", warmup);
    out.put("reps", reps);
    out.put("ns_per_value", median);
    out.put("best_ns_per_value", best);
    out.put("found", found);
    out.put("found_hash_check", foundHashCheck);
    return out;
  }

  /** The values to time, in one of the two file formats. */
  private interface Workload {
    int size();

    void hashInto(BlockSplitBloomFilter f, long[] out);

    void hashInsert(BlockSplitBloomFilter f);

    long hashCheck(BlockSplitBloomFilter f);
  }

  private static int count(long requested, long available, String what) {
    if (requested > available) {
      throw new Cli.UsageException("--n " + requested + " exceeds the " + available + " " + what + " in the file");
    }
    long n = requested < 0 ? available : requested;
    if (n > Integer.MAX_VALUE - 8) {
      throw new Cli.UsageException("too many values: " + n);
    }
    return (int) n;
  }

  private static final class LongWorkload implements Workload {
    private final long[] values;

    LongWorkload(ByteBuffer buf, long n) {
      if (buf.remaining() % 8 != 0) {
        throw new Cli.UsageException("int64 values file length " + buf.remaining() + " is not a multiple of 8");
      }
      values = new long[count(n, buf.remaining() / 8, "int64 values")];
      buf.asLongBuffer().get(values);
    }

    public int size() {
      return values.length;
    }

    public void hashInto(BlockSplitBloomFilter f, long[] out) {
      for (int i = 0; i < values.length; i++) {
        out[i] = f.hash(values[i]);
      }
    }

    public void hashInsert(BlockSplitBloomFilter f) {
      for (long v : values) {
        f.insertHash(f.hash(v));
      }
    }

    public long hashCheck(BlockSplitBloomFilter f) {
      long hits = 0;
      for (long v : values) {
        if (f.findHash(f.hash(v))) {
          hits++;
        }
      }
      return hits;
    }
  }

  private static final class BinaryWorkload implements Workload {
    private final Binary[] values;

    BinaryWorkload(ByteBuffer buf, long n) {
      List<Binary> list = new java.util.ArrayList<>();
      while (buf.remaining() > 0 && (n < 0 || list.size() < n)) {
        if (buf.remaining() < 4) {
          throw new Cli.UsageException("string values file ends inside a length prefix");
        }
        int len = buf.getInt();
        if (len < 0 || len > buf.remaining()) {
          throw new Cli.UsageException(
              "string record " + list.size() + " declares " + len + " bytes, " + buf.remaining() + " remain");
        }
        byte[] b = new byte[len];
        buf.get(b);
        list.add(Binary.fromConstantByteArray(b));
      }
      values = list.toArray(new Binary[0]);
      count(n, values.length, "strings");
    }

    public int size() {
      return values.length;
    }

    public void hashInto(BlockSplitBloomFilter f, long[] out) {
      for (int i = 0; i < values.length; i++) {
        out[i] = f.hash(values[i]);
      }
    }

    public void hashInsert(BlockSplitBloomFilter f) {
      for (Binary v : values) {
        f.insertHash(f.hash(v));
      }
    }

    public long hashCheck(BlockSplitBloomFilter f) {
      long hits = 0;
      for (Binary v : values) {
        if (f.findHash(f.hash(v))) {
          hits++;
        }
      }
      return hits;
    }
  }
}

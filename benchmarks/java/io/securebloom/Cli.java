package io.securebloom;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import shaded.parquet.com.fasterxml.jackson.core.JsonProcessingException;
import shaded.parquet.com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Command-line plumbing shared by the harness main classes: option parsing, Hadoop properties from
 * {@code --conf k=v} or from standard input ({@code --conf-stdin}, one k=v a line, so secrets stay out
 * of process listings), and one-line JSON errors on stderr with exit code 2 (usage) or 1 (failure).
 */
final class Cli {
  /** Thrown for wrong usage; main classes turn it into exit code 2. */
  static final class UsageException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    UsageException(String message) {
      super(message);
    }
  }

  /** A harness body: arguments in, one JSON object out. */
  interface Body {
    Map<String, Object> run(String[] args) throws Exception;
  }

  /** parquet-java's shaded Jackson (parquet-jackson, on Spark's class path), as the KMS client uses. */
  private static final ObjectMapper JSON = new ObjectMapper();

  private Cli() {}

  /** One line of JSON for {@code value} (maps, lists, strings, numbers, booleans, null). */
  static String json(Object value) {
    try {
      return JSON.writeValueAsString(value);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("JSON: cannot write the harness result", e);
    }
  }

  /** Runs {@code body} and prints its result as one JSON line; errors go to {@link #die}. */
  static void runMain(String[] args, Body body) {
    try {
      System.out.println(json(body.run(args)));
      System.out.flush();
    } catch (Throwable t) {
      die(t);
    }
  }

  /** Lower-case hex SHA-256 of {@code data}. */
  static String sha256Hex(byte[] data) throws java.security.NoSuchAlgorithmException {
    StringBuilder hex = new StringBuilder();
    for (byte b : java.security.MessageDigest.getInstance("SHA-256").digest(data)) {
      hex.append(Character.forDigit((b >> 4) & 0xf, 16)).append(Character.forDigit(b & 0xf, 16));
    }
    return hex.toString();
  }

  /**
   * Splits {@code args} into (option, value) pairs: "--opt value", a flag from {@code flags} (value
   * "true"), or a bare argument (option "").
   */
  static List<String[]> pairs(String[] args, java.util.Set<String> flags) {
    List<String[]> out = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (!a.startsWith("--")) {
        out.add(new String[] {"", a});
      } else if (flags.contains(a)) {
        out.add(new String[] {a, "true"});
      } else {
        if (i + 1 >= args.length) {
          throw new UsageException("option " + a + " needs a value");
        }
        out.add(new String[] {a, args[++i]});
      }
    }
    return out;
  }

  /** Adds a "k=v" property to {@code conf}. */
  static void addProperty(Map<String, String> conf, String kv) {
    int eq = kv.indexOf('=');
    if (eq <= 0) {
      throw new UsageException("--conf needs k=v (got a value without '=')");
    }
    conf.put(kv.substring(0, eq).trim(), kv.substring(eq + 1).trim());
  }

  /**
   * The options every harness shares: {@code --conf k=v} and {@code --conf-stdin} add Hadoop
   * properties to {@code props}; anything else is an unknown option.
   */
  static void hadoopOption(String[] pair, Map<String, String> props) throws IOException {
    switch (pair[0]) {
      case "--conf":
        addProperty(props, pair[1]);
        break;
      case "--conf-stdin":
        props.putAll(readStdinProperties());
        break;
      default:
        throw new UsageException("unknown option " + pair[0]);
    }
  }

  /** The one positional file argument: {@code given}, refused if {@code current} is already set. */
  static String onlyFile(String current, String given) {
    if (current != null) {
      throw new UsageException("more than one file given");
    }
    return given;
  }

  /** Reads k=v lines from standard input until EOF; blank lines and lines starting with # are skipped. */
  static Map<String, String> readStdinProperties() throws IOException {
    Map<String, String> conf = new LinkedHashMap<>();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      String t = line.trim();
      if (!t.isEmpty() && !t.startsWith("#")) {
        addProperty(conf, t);
      }
    }
    return conf;
  }

  /** Prints {"error": ..., "type": ...} to stderr and exits: 2 for usage errors, 1 otherwise. */
  static void die(Throwable t) {
    Map<String, Object> err = new LinkedHashMap<>();
    err.put("error", String.valueOf(t.getMessage()));
    err.put("type", t.getClass().getName());
    Throwable cause = t.getCause();
    List<String> causes = new ArrayList<>();
    while (cause != null && causes.size() < 5) {
      causes.add(cause.getClass().getName() + ": " + cause.getMessage());
      cause = cause.getCause();
    }
    if (!causes.isEmpty()) {
      err.put("causes", causes);
    }
    System.err.println(json(err));
    System.err.flush();
    System.exit(t instanceof UsageException ? 2 : 1);
  }
}

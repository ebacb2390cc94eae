// Prints java.util.HashMap iteration orders for secure_bloom's key-material JSON tests
// (tests/test_key_material.py compares them with secure_bloom/kms/_java_json.py).
// Regenerate: java JavaHashMapOrder.java > java_hashmap_order.txt   (Java 11+ single-file launch)
// Each line: <initial capacity or "default">|<keys in insertion order, comma-separated>|<iteration order>
import java.util.*;

public class JavaHashMapOrder {
  static void print(Integer capacity, List<String> keys) {
    Map<String, Object> map = capacity == null ? new HashMap<>() : new HashMap<>(capacity);
    for (String k : keys) map.put(k, Boolean.TRUE);
    System.out.println((capacity == null ? "default" : capacity) + "|" + String.join(",", keys) + "|"
        + String.join(",", map.keySet()));
  }

  public static void main(String[] args) {
    // Sidecar maps: parquet-java adds the footer key, then columnKey0..N-1 (new HashMap<>()).
    for (int n : new int[] {0, 1, 2, 3, 5, 8, 12, 13, 24, 25, 48, 49, 100, 300}) {
      List<String> keys = new ArrayList<>();
      keys.add("footerKey");
      for (int i = 0; i < n; i++) keys.add("columnKey" + i);
      print(null, keys);
    }
    // Key material (new HashMap<>(10)) in its four shapes, and key metadata (new HashMap<>(3)).
    List<String> all = List.of("keyMaterialType", "internalStorage", "isFooterKey", "kmsInstanceID",
        "kmsInstanceURL", "masterKeyID", "wrappedDEK", "doubleWrapping", "keyEncryptionKeyID", "wrappedKEK");
    print(10, all);
    print(10, List.of("keyMaterialType", "isFooterKey", "kmsInstanceID", "kmsInstanceURL", "masterKeyID",
        "wrappedDEK", "doubleWrapping"));
    print(10, List.of("keyMaterialType", "internalStorage", "isFooterKey", "masterKeyID", "wrappedDEK",
        "doubleWrapping", "keyEncryptionKeyID", "wrappedKEK"));
    print(10, List.of("keyMaterialType", "isFooterKey", "masterKeyID", "wrappedDEK", "doubleWrapping"));
    print(3, List.of("keyMaterialType", "internalStorage", "keyReference"));
  }
}

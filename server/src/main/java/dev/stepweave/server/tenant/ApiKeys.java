package dev.stepweave.server.tenant;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The keys of an API key file: one key per line, an optional label after whitespace, {@code #}
 * starting a comment line, blank lines ignored. Keys are held by their SHA-256 only, so a lookup
 * compares digests, not the secret.
 */
public final class ApiKeys {
  /** Shorter keys are refused: a guessable key is no key. */
  public static final int MIN_KEY_CHARS = 16;

  private final Map<String, Tenant> byDigest;

  private ApiKeys(Map<String, Tenant> byDigest) {
    this.byDigest = Map.copyOf(byDigest);
  }

  /**
   * Parses the lines of a key file.
   *
   * @param source what to name in errors (the file's path)
   * @throws IllegalArgumentException naming the line: a short key, a key given twice, no key at all
   */
  public static ApiKeys parse(List<String> lines, String source) {
    Map<String, Tenant> keys = new HashMap<>();
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i).strip();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      String[] parts = line.split("\\s+", 2);
      String key = parts[0];
      String at = source + ":" + (i + 1);
      if (key.length() < MIN_KEY_CHARS) {
        throw new IllegalArgumentException(
            at + ": a key must have at least " + MIN_KEY_CHARS + " characters");
      }
      if (!key.chars().allMatch(c -> c > 0x20 && c < 0x7f)) {
        throw new IllegalArgumentException(at + ": a key must be printable ASCII");
      }
      String digest = digest(key);
      String id = digest.substring(0, 16);
      String label = parts.length > 1 ? parts[1].strip() : id;
      if (keys.put(digest, new Tenant(id, label, label.equals(Tenant.ADMIN_LABEL))) != null) {
        throw new IllegalArgumentException(at + ": this key is already on an earlier line");
      }
    }
    if (keys.isEmpty()) {
      throw new IllegalArgumentException(source + ": no API keys in the file");
    }
    return new ApiKeys(keys);
  }

  /** The tenant of {@code key}, when the file has it. */
  public Optional<Tenant> find(String key) {
    return Optional.ofNullable(byDigest.get(digest(key)));
  }

  public int size() {
    return byDigest.size();
  }

  private static String digest(String key) {
    try {
      return HexFormat.of()
          .formatHex(
              MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK has no SHA-256", e);
    }
  }
}

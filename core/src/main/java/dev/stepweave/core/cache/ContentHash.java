package dev.stepweave.core.cache;

import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * SHA-256 content hashes for cache keys: collisions must not serve one input's value for another.
 */
public final class ContentHash {
  private ContentHash() {}

  /** The hash of a sequence of token ids. */
  public static String ofLongs(long[] values) {
    ByteBuffer bytes = ByteBuffer.allocate(values.length * Long.BYTES);
    bytes.asLongBuffer().put(values);
    return hex(bytes.array());
  }

  /** The hash of bytes in memory. */
  public static String ofBytes(byte[] data) {
    return hex(data);
  }

  /** The hash of a file's bytes, read in chunks (an adapter file may be hundreds of MB). */
  public static String ofFile(java.nio.file.Path file) throws java.io.IOException {
    MessageDigest digest = sha256();
    try (var in = java.nio.file.Files.newInputStream(file)) {
      byte[] buffer = new byte[1 << 20];
      for (int n; (n = in.read(buffer)) > 0; ) {
        digest.update(buffer, 0, n);
      }
    }
    return HexFormat.of().formatHex(digest.digest());
  }

  private static String hex(byte[] data) {
    return HexFormat.of().formatHex(sha256().digest(data));
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK always has SHA-256", e);
    }
  }
}

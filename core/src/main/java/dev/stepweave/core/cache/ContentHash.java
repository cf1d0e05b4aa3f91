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

  private static String hex(byte[] data) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK always has SHA-256", e);
    }
  }
}

package dev.stepweave.server;

import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.regex.Pattern;

/**
 * Job ids: a kind prefix and 128 random bits, so ids cannot be guessed, and a strict pattern, so an
 * id taken from a URL is safe to use in a file name.
 */
final class JobIds {
  static final String VIDEO = "video_";
  static final String IMAGE = "image_";
  private static final Pattern ID = Pattern.compile("(video|image)_[0-9a-f]{32}");
  private static final SecureRandom RANDOM = new SecureRandom();

  private JobIds() {}

  static String next(String prefix) {
    byte[] bits = new byte[16];
    RANDOM.nextBytes(bits);
    return prefix + HexFormat.of().formatHex(bits);
  }

  static boolean isValid(String id) {
    return id != null && ID.matcher(id).matches();
  }
}

package dev.stepweave.media;

/** MP4 bytes compared across two encodes. */
final class Mp4Bytes {
  private Mp4Bytes() {}

  /**
   * The file with the creation and modification times of its movie, track and media headers zeroed:
   * the muxer stamps the wall clock there, so two encodes a second apart differ in them.
   */
  static byte[] withoutTimestamps(byte[] mp4) {
    byte[] out = mp4.clone();
    for (String box : new String[] {"mvhd", "tkhd", "mdhd"}) {
      byte[] type = box.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
      for (int i = 4; i + 12 <= out.length; i++) {
        if (java.util.Arrays.equals(out, i, i + 4, type, 0, 4)) {
          // type, then version (1 byte) and flags (3); times are 4 bytes each in version 0, 8 in 1.
          int width = out[i + 4] == 1 ? 8 : 4;
          java.util.Arrays.fill(out, i + 8, Math.min(out.length, i + 8 + 2 * width), (byte) 0);
        }
      }
    }
    return out;
  }
}

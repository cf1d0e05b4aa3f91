package dev.stepweave.tensor.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Offsets past 2 GiB must work (real checkpoints have multi-GB shards). The file is sparse: its
 * length is set without writing the gap, so the test costs almost no disk.
 */
class SafetensorsLargeFileTest {
  private static final long BEYOND_2_GIB = (1L << 31) + 12_345;

  @TempDir Path dir;

  @Test
  void tensorPlacedBeyondTwoGibibytesIsRead() throws IOException {
    Path file = dir.resolve("sparse.safetensors");
    long begin = BEYOND_2_GIB;
    String header =
        "{\"near\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
            + "\"far\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":["
            + begin
            + ","
            + (begin + 16)
            + "]}}";
    byte[] json = header.getBytes(StandardCharsets.UTF_8);
    long dataStart = 8 + json.length;
    try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
      raf.setLength(dataStart + begin + 16);
      ByteBuffer prefix =
          ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(json.length);
      raf.write(prefix.array());
      raf.write(json);
      ByteBuffer far = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN);
      far.putFloat(1f).putFloat(-2f).putFloat(3.5f).putFloat(4e9f);
      raf.seek(dataStart + begin);
      raf.write(far.array());
    }

    try (SafetensorsFile f = SafetensorsFile.open(file)) {
      assertArrayEquals(new float[] {0f}, f.load("near").toFloatArray());
      assertArrayEquals(new int[] {2, 2}, f.info("far").shape());
      assertArrayEquals(new float[] {1f, -2f, 3.5f, 4e9f}, f.load("far").toFloatArray());
      assertArrayEquals(new float[] {1f, -2f, 3.5f, 4e9f}, f.loadF32("far").toFloatArray());
      assertEquals(3.5f, f.load("far").getFloat(1, 0));
    }
  }
}

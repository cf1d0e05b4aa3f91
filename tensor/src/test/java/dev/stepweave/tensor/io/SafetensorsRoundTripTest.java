package dev.stepweave.tensor.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SafetensorsRoundTripTest {
  @TempDir Path dir;

  /** A tensor of {@code dtype} whose elements are 0, 1, 2, … (booleans alternate). */
  private static Tensor counting(DType dtype, int... shape) {
    Tensor t = Tensor.zeros(dtype, shape);
    Tensor flat = t.reshape(-1);
    for (int i = 0; i < flat.numel(); i++) {
      flat.setFloat(dtype == DType.BOOL ? i % 2 : i - 3, i);
    }
    return t;
  }

  @Test
  void everyDtypeRoundTripsWithItsBytes() throws IOException {
    Map<String, Tensor> tensors = new LinkedHashMap<>();
    for (DType dtype : DType.values()) {
      tensors.put("t_" + dtype, counting(dtype, 2, 3));
    }
    Path file = dir.resolve("all.safetensors");
    Safetensors.write(file, tensors, Map.of("format", "pt", "note", "all dtypes"));

    try (SafetensorsFile f = SafetensorsFile.open(file)) {
      assertEquals(tensors.keySet(), f.keys());
      assertEquals(Map.of("format", "pt", "note", "all dtypes"), f.metadata());
      for (Map.Entry<String, Tensor> e : tensors.entrySet()) {
        Tensor loaded = f.load(e.getKey());
        assertEquals(e.getValue().dtype(), loaded.dtype());
        assertEquals(e.getValue().dtype(), f.info(e.getKey()).dtype());
        assertArrayEquals(new int[] {2, 3}, loaded.shape());
        assertArrayEquals(
            e.getValue().segment().toArray(ValueLayout.JAVA_BYTE),
            loaded.segment().toArray(ValueLayout.JAVA_BYTE),
            e.getKey());
      }
    }
  }

  @Test
  void f64AndI64KeepFullPrecision() throws IOException {
    Tensor longs = Tensor.ofLongs(new long[] {Long.MIN_VALUE, 1L << 53 | 1, -7}, 3);
    Tensor doubles = Tensor.zeros(DType.F64, 2);
    doubles.storage().segment().setAtIndex(ValueLayout.JAVA_DOUBLE, 0, Math.PI);
    doubles.storage().segment().setAtIndex(ValueLayout.JAVA_DOUBLE, 1, 1e-300);
    Path file = dir.resolve("wide.safetensors");
    Safetensors.write(file, Map.of("ids", longs, "d", doubles), null);
    try (SafetensorsFile f = SafetensorsFile.open(file)) {
      assertArrayEquals(new long[] {Long.MIN_VALUE, 1L << 53 | 1, -7}, f.load("ids").toLongArray());
      var seg = f.load("d").segment();
      assertEquals(Math.PI, seg.getAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, 0));
      assertEquals(1e-300, seg.getAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, 1));
      assertTrue(f.metadata().isEmpty());
    }
  }

  @Test
  void stridedViewsAreWrittenAsContiguousRowMajorData() throws IOException {
    Tensor base = counting(DType.F32, 3, 4);
    Tensor transposed = base.transpose(0, 1); // [4, 3], strides (1, 4)
    Tensor sliced = base.slice(1, 1, 3); // [3, 2], rows not dense
    Tensor broadcast = Tensor.of(new float[] {5, 6}, 2, 1).expand(2, 3); // stride 0
    Tensor bf16Columns = counting(DType.BF16, 2, 3).transpose(0, 1);
    Path file = dir.resolve("views.safetensors");
    Safetensors.write(
        file, Map.of("t", transposed, "s", sliced, "b", broadcast, "h", bf16Columns), Map.of());
    try (SafetensorsFile f = SafetensorsFile.open(file)) {
      for (var e :
          Map.of("t", transposed, "s", sliced, "b", broadcast, "h", bf16Columns).entrySet()) {
        Tensor loaded = f.load(e.getKey());
        assertTrue(loaded.isContiguous());
        assertArrayEquals(e.getValue().shape(), loaded.shape());
        assertArrayEquals(e.getValue().toFloatArray(), loaded.toFloatArray(), e.getKey());
      }
    }
  }

  @Test
  void scalarsAndEmptyTensorsRoundTrip() throws IOException {
    Path file = dir.resolve("edge.safetensors");
    Safetensors.write(
        file,
        Map.of("scalar", Tensor.of(new float[] {2.5f}), "empty", Tensor.zeros(DType.F16, 0, 7)),
        null);
    try (SafetensorsFile f = SafetensorsFile.open(file)) {
      assertEquals(0, f.load("scalar").rank());
      assertEquals(2.5f, f.load("scalar").getFloat());
      assertArrayEquals(new int[] {0, 7}, f.load("empty").shape());
    }
  }

  @Test
  void layoutFollowsTheReferenceWriter() throws IOException {
    Map<String, Tensor> tensors =
        Map.of(
            "z_f32", counting(DType.F32, 3),
            "a_u8", counting(DType.U8, 3),
            "m_i64", counting(DType.I64, 1),
            "b_bf16", counting(DType.BF16, 3),
            "c_f32", counting(DType.F32, 1));
    Path file = dir.resolve("layout.safetensors");
    Safetensors.write(file, tensors, Map.of("format", "pt"));

    byte[] bytes = Files.readAllBytes(file);
    long headerLength = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).getLong();
    assertEquals(0, headerLength % 8, "data section must start 8-byte aligned");
    String header = new String(bytes, 8, (int) headerLength, StandardCharsets.UTF_8);
    assertEquals(header.strip() + " ".repeat(header.length() - header.strip().length()), header);
    // Metadata first, then tensors by descending dtype rank and name, packed without gaps.
    assertEquals(
        "{\"__metadata__\":{\"format\":\"pt\"},"
            + "\"m_i64\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]},"
            + "\"c_f32\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]},"
            + "\"z_f32\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[12,24]},"
            + "\"b_bf16\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[24,30]},"
            + "\"a_u8\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[30,33]}}",
        header.strip());
    assertEquals(8 + headerLength + 33, bytes.length);
  }

  @Test
  void writingReplacesAnExistingFileAndLeavesNoPartialFile() throws IOException {
    Path file = dir.resolve("w.safetensors");
    Safetensors.write(file, Map.of("a", Tensor.of(new float[] {1}, 1)), null);
    Safetensors.write(file, Map.of("b", Tensor.of(new float[] {2}, 1)), null);
    try (SafetensorsFile f = SafetensorsFile.open(file)) {
      assertEquals(java.util.Set.of("b"), f.keys());
    }
    try (var files = Files.list(dir)) {
      assertEquals(List.of(file), files.toList());
    }
  }

  @Test
  void metadataKeyCannotNameATensor() {
    Path file = dir.resolve("m.safetensors");
    assertThrows(
        IllegalArgumentException.class,
        () -> Safetensors.write(file, Map.of("__metadata__", Tensor.of(new float[] {1}, 1)), null));
  }

  @Test
  void loadIsAViewOfTheMappingAndLoadF32AnIndependentCopy() throws IOException {
    Tensor bf16 = Tensor.zeros(DType.BF16, 3);
    bf16.setFloat(1.5f, 0);
    bf16.setFloat(-2.25f, 1);
    bf16.setFloat(3e4f, 2);
    Tensor f16 = Tensor.zeros(DType.F16, 2);
    f16.setFloat(0.333251953125f, 0);
    f16.setFloat(-65504f, 1);
    Path file = dir.resolve("half.safetensors");
    Safetensors.write(
        file, Map.of("bf", bf16, "h", f16, "f", Tensor.of(new float[] {7, 8}, 2)), null);

    Tensor viewOfF;
    Tensor copyOfF;
    Tensor widened;
    try (SafetensorsFile f = SafetensorsFile.open(file)) {
      viewOfF = f.load("f");
      assertTrue(viewOfF.storage().segment().isMapped(), "load must not copy");
      copyOfF = f.loadF32("f");
      widened = f.loadF32("bf");
      assertEquals(DType.F32, widened.dtype());
      assertArrayEquals(new float[] {1.5f, -2.25f, bf16.getFloat(2)}, widened.toFloatArray());
      assertArrayEquals(new float[] {0.333251953125f, -65504f}, f.loadF32("h").toFloatArray());
    }
    assertThrows(IllegalStateException.class, () -> viewOfF.getFloat(0));
    assertArrayEquals(new float[] {7, 8}, copyOfF.toFloatArray());
    assertArrayEquals(new float[] {1.5f, -2.25f, bf16.getFloat(2)}, widened.toFloatArray());
  }

  @Test
  void unalignedDataIsReadCorrectly() throws IOException {
    // Pad the header so the data section starts at file byte 8k+2: tensor w then starts at 8k+3,
    // x at 8k+11, neither aligned to its element size (the mapping itself is page-aligned).
    StringBuilder header =
        new StringBuilder(
            "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[1,9]},"
                + "\"x\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[9,17]}}");
    while ((8 + header.length()) % 8 != 2) {
      header.append(' ');
    }
    ByteBuffer data = ByteBuffer.allocate(17).order(ByteOrder.LITTLE_ENDIAN);
    data.put((byte) 0).putFloat(1.25f).putFloat(-3f).putDouble(0.1);
    Path file =
        RawSafetensors.write(dir.resolve("odd.safetensors"), header.toString(), data.array());
    try (SafetensorsFile f = SafetensorsFile.open(file)) {
      assertArrayEquals(new float[] {1.25f, -3f}, f.load("w").toFloatArray());
      assertArrayEquals(new float[] {1.25f, -3f}, f.loadF32("w").toFloatArray());
      assertEquals(0.1, f.load("x").segment().get(ValueLayout.JAVA_DOUBLE_UNALIGNED, 0));
    }
  }
}

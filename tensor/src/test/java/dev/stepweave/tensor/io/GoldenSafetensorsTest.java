package dev.stepweave.tensor.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Every safetensors file the reference stack recorded must open and load completely. */
class GoldenSafetensorsTest {
  @TempDir Path dir;

  static Stream<Path> goldenFiles() throws IOException {
    Path golden = Path.of(System.getProperty("stepweave.golden"));
    try (Stream<Path> walk = Files.walk(golden)) {
      List<Path> files =
          walk.filter(p -> p.getFileName().toString().endsWith(".safetensors")).sorted().toList();
      assertFalse(files.isEmpty(), "no safetensors files under " + golden);
      return files.stream();
    }
  }

  @ParameterizedTest
  @MethodSource("goldenFiles")
  void everyTensorLoads(Path file) {
    try (SafetensorsFile f = SafetensorsFile.open(file)) {
      assertFalse(f.keys().isEmpty());
      for (String key : f.keys()) {
        TensorSource.TensorInfo info = f.info(key);
        Tensor view = f.load(key);
        assertEquals(info.dtype(), view.dtype());
        assertArrayEquals(info.shape(), view.shape());
        Tensor copy = f.loadF32(key);
        assertEquals(DType.F32, copy.dtype());
        assertArrayEquals(view.toFloatArray(), copy.toFloatArray(), key);
      }
    }
  }

  /**
   * Rewriting a recording with our writer reproduces the reference's bytes. The reference writes
   * several metadata entries in hash order, and an empty {@code __metadata__} object when given
   * empty metadata (which our writer omits: to every reader it is the same as none), so for such
   * files the header is compared as JSON (same entries, same offsets) and the data section byte for
   * byte.
   */
  @ParameterizedTest
  @MethodSource("goldenFiles")
  void rewritingReproducesTheReferenceBytes(Path file) throws IOException {
    Path copy = dir.resolve("copy.safetensors");
    boolean hashOrderedMetadata;
    try (SafetensorsFile f = SafetensorsFile.open(file)) {
      hashOrderedMetadata = f.metadata().size() > 1;
      Map<String, Tensor> tensors = new LinkedHashMap<>();
      for (String key : f.keys()) {
        tensors.put(key, f.load(key));
      }
      Safetensors.write(copy, tensors, f.metadata());
    }
    byte[] expected = Files.readAllBytes(file);
    byte[] actual = Files.readAllBytes(copy);
    int expectedHeader = headerLength(expected);
    var json = new com.fasterxml.jackson.databind.ObjectMapper();
    JsonNode reference =
        json.readTree(
            new String(expected, 8, expectedHeader, java.nio.charset.StandardCharsets.UTF_8));
    JsonNode metadata = reference.get(SafetensorsHeader.METADATA_KEY);
    boolean emptyMetadata = metadata != null && metadata.isEmpty();
    if (hashOrderedMetadata || emptyMetadata) {
      if (emptyMetadata) {
        ((ObjectNode) reference).remove(SafetensorsHeader.METADATA_KEY);
      }
      int actualHeader = headerLength(actual);
      assertEquals(
          reference,
          json.readTree(
              new String(actual, 8, actualHeader, java.nio.charset.StandardCharsets.UTF_8)));
      assertArrayEquals(
          java.util.Arrays.copyOfRange(expected, 8 + expectedHeader, expected.length),
          java.util.Arrays.copyOfRange(actual, 8 + actualHeader, actual.length));
      return;
    }
    assertTrue(
        java.util.Arrays.equals(expected, actual),
        () ->
            file
                + " differs at byte "
                + java.util.Arrays.mismatch(expected, actual)
                + " of "
                + expected.length);
  }

  private static int headerLength(byte[] file) {
    return (int)
        java.nio.ByteBuffer.wrap(file, 0, 8).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong();
  }
}

package dev.stepweave.tensor.io;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** Hand-made safetensors files for tests, including malformed ones. */
final class RawSafetensors {
  private RawSafetensors() {}

  /** Writes the length prefix, {@code header} verbatim, then {@code data}. */
  static Path write(Path file, String header, byte[] data) throws IOException {
    byte[] json = header.getBytes(StandardCharsets.UTF_8);
    ByteBuffer buf =
        ByteBuffer.allocate(8 + json.length + data.length).order(ByteOrder.LITTLE_ENDIAN);
    buf.putLong(json.length).put(json).put(data);
    Files.write(file, buf.array());
    return file;
  }

  /** Writes {@code header} followed by {@code dataBytes} zero bytes. */
  static Path write(Path file, String header, int dataBytes) throws IOException {
    return write(file, header, new byte[dataBytes]);
  }

  /** Asserts the one-line contract of checkpoint errors and that the message names each part. */
  static void assertOneLineNaming(CheckpointException e, String... parts) {
    String message = e.getMessage();
    assertFalse(message.contains("\n") || message.contains("\r"), "multi-line: " + message);
    for (String part : parts) {
      assertTrue(message.contains(part), "'" + message + "' does not name " + part);
    }
  }
}

package dev.stepweave.media;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AtomicOutputTest {
  @TempDir Path dir;

  @Test
  void aFailingWriterLeavesNoPartialFileAndKeepsTheOldOne() throws IOException {
    Path target = dir.resolve("video.mp4");
    Files.writeString(target, "previous");
    assertThrows(
        IOException.class,
        () ->
            AtomicOutput.writeFile(
                target,
                temporary -> {
                  Files.writeString(temporary, "half a video");
                  throw new IOException("disk full");
                }));
    assertEquals("previous", Files.readString(target));
    assertEquals(1, Mp4RoundTripTest.entries(dir));
  }

  @Test
  void aFailingDirectoryWriterLeavesNothing() {
    Path target = dir.resolve("frames");
    assertThrows(
        IllegalStateException.class,
        () ->
            AtomicOutput.writeDirectory(
                target,
                temporary -> {
                  Files.writeString(temporary.resolve("frame_0000.png"), "x");
                  throw new IllegalStateException("encoder crashed");
                }));
    assertEquals(0, Mp4RoundTripTest.entries(dir));
  }
}

package dev.stepweave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The serve command's store and retention flags: their forms, and what a bad value gets. */
class ServeStoreOptionsTest {
  @Test
  void durationsAndSizesInTheirForms() {
    assertEquals(Duration.ofMillis(500), SizesAndDurations.duration("--x", "500ms"));
    assertEquals(Duration.ofSeconds(90), SizesAndDurations.duration("--x", "90s"));
    assertEquals(Duration.ofMinutes(30), SizesAndDurations.duration("--x", "30m"));
    assertEquals(Duration.ofHours(12), SizesAndDurations.duration("--x", "12h"));
    assertEquals(Duration.ofDays(7), SizesAndDurations.duration("--x", "7d"));
    assertEquals(Duration.ofHours(1), SizesAndDurations.duration("--x", "PT1H"));
    assertEquals(500_000_000L, SizesAndDurations.bytes("--x", "500000000"));
    assertEquals(20L << 30, SizesAndDurations.bytes("--x", "20g"));
    assertEquals(3L << 20, SizesAndDurations.bytes("--x", "3M"));
    assertTrue(
        assertThrows(
                IllegalArgumentException.class, () -> SizesAndDurations.bytes("--x", "9999999t"))
            .getMessage()
            .contains("too large"));
  }

  /** Each bad value is one line naming the flag, before any model is loaded. */
  @Test
  void badValuesAreOneLineErrorsNamingTheFlag() {
    String[][] cases = {
      {"--artifact-ttl", "soon", "--artifact-ttl must be a duration"},
      {"--artifact-ttl", "0s", "--artifact-ttl must be > 0"},
      {"--checkpoint-interval", "-5s", "--checkpoint-interval must be a duration"},
      {"--max-artifact-bytes", "lots", "--max-artifact-bytes must be a byte count"},
      {"--replica-id", "gpu 0", "--replica-id must be 1-64 letters"},
      {"--store", "jdbc:mysql://db/x", "--store must be a jdbc:postgresql:// URL"},
    };
    for (String[] c : cases) {
      var r = CliHarness.run("serve", "--model", "/nonexistent-model", c[0], c[1]);
      assertTrue(r.exit() != 0, c[0] + " " + c[1]);
      assertTrue(r.err().contains(c[2]), c[0] + " " + c[1] + ": " + r.err());
      assertEquals(1, r.errorLines(), r.err());
    }
  }
}

package dev.stepweave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Safetensors;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code stepweave serve --lora-dir / --lora}: what a bad adapter argument gets at startup. */
@Timeout(120)
class ServeLorasTest {
  @TempDir Path tmp;

  @Test
  void aFileTheModelRefusesStopsTheStartNamingIt() throws Exception {
    Path dir = Files.createDirectories(tmp.resolve("loras"));
    Path bad = dir.resolve("notes.safetensors");
    Safetensors.write(bad, Map.of("notes.weight", Tensor.of(new float[] {1}, 1)), Map.of());
    assertRefused(bad.toString(), "--lora-dir", dir.toString());
    assertRefused(bad.toString(), "--lora", "notes=" + bad);
  }

  @Test
  void badArgumentsAreOneLineErrors() {
    assertRefused("--lora wants NAME=FILE, got 'style'", "--lora", "style");
    assertRefused(
        "--lora names 'a' twice", "--lora", "a=x.safetensors", "--lora", "a=y.safetensors");
    assertRefused(
        "adapter directory not found: " + tmp.resolve("nope"),
        "--lora-dir",
        tmp.resolve("nope").toString());
    assertRefused(
        "adapter file not found: " + tmp.resolve("a.safetensors"),
        "--lora",
        "a=" + tmp.resolve("a.safetensors"));
  }

  private void assertRefused(String message, String... loraArgs) {
    List<String> args =
        new ArrayList<>(
            List.of(
                "serve",
                "--model",
                ServeCommandTest.TINY.toString(),
                "--port",
                "0",
                "--artifacts",
                tmp.resolve("artifacts").toString()));
    args.addAll(List.of(loraArgs));
    CliHarness r = CliHarness.run(args.toArray(String[]::new));
    assertEquals(1, r.exit(), r.err());
    assertEquals(1, r.errorLines(), r.err());
    assertTrue(r.err().contains(message), r.err());
    assertTrue(r.out().isEmpty(), "it started serving: " + r.out());
  }
}

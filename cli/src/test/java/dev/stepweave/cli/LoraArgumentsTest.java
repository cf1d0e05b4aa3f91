package dev.stepweave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.request.InvalidRequestException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How the CLI reads {@code generate --lora FILE[:SCALE]} and {@code serve --lora NAME=FILE}. */
class LoraArgumentsTest {
  @TempDir Path tmp;

  @Test
  void aScaleIsTheNumberAfterTheLastColonAndDefaultsToOne() throws IOException {
    Path style = Files.writeString(tmp.resolve("style.safetensors"), "x");
    Path colons = Files.createDirectories(tmp.resolve("run:2024:v1"));
    Path speed = Files.writeString(colons.resolve("speed.safetensors"), "x");
    Path grain = Files.writeString(colons.resolve("grain.safetensors"), "x");
    assertEquals(
        List.of(
            new LoraArguments.FileUse("style", style, 0.8),
            new LoraArguments.FileUse("speed", speed, 1.0),
            new LoraArguments.FileUse("grain", grain, -1.5),
            new LoraArguments.FileUse("style", style, 0.1)),
        List.of(
            only(style + ":0.8"),
            only(speed.toString()),
            only(grain + ":-1.5"),
            only(style + ":1e-1")));
    assertEquals(
        List.of("style", "speed"),
        LoraArguments.fileUses(List.of(style + ":2", speed.toString())).stream()
            .map(LoraArguments.FileUse::name)
            .toList(),
        "stacking order is the order given");
  }

  @Test
  void badFileArgumentsAreOneLineErrorsNamingWhatIsWrong() throws IOException {
    Path style = Files.writeString(tmp.resolve("style.safetensors"), "x");
    Path pickle = Files.writeString(tmp.resolve("style.ckpt"), "x");
    Files.createDirectories(tmp.resolve("other"));
    Path twin = Files.writeString(tmp.resolve("other").resolve("style.safetensors"), "x");
    refused("the scale after ':' must be a number, got 'strong'", style + ":strong");
    refused("the scale after ':' must be a number, got ''", style + ":");
    refused(
        "adapter file not found: " + tmp.resolve("nope.safetensors"), tmp + "/nope.safetensors");
    refused(
        "adapter file not found: " + tmp.resolve("nope.safetensors"),
        tmp + "/nope.safetensors:0.5");
    refused("adapters must be .safetensors files (no pickle)", pickle.toString());
    refused("adapter file not found: " + tmp, tmp + ":1");
    InvalidRequestException twice =
        assertThrows(
            InvalidRequestException.class,
            () -> LoraArguments.fileUses(List.of(style.toString(), twin + ":0.5")));
    assertEquals(
        "--lora: two adapters named 'style': " + style + " and " + twin, twice.getMessage());
  }

  @Test
  void serveNamesFiles() {
    assertEquals(
        Map.of("a", Path.of("x/a.safetensors"), "b", Path.of("b=c.safetensors")),
        LoraArguments.named(List.of("a=x/a.safetensors", "b=b=c.safetensors")));
    for (String bad : List.of("a.safetensors", "=a.safetensors", "a=")) {
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> LoraArguments.named(List.of(bad)));
      assertEquals("--lora wants NAME=FILE, got '" + bad + "'", e.getMessage());
    }
    IllegalArgumentException twice =
        assertThrows(
            IllegalArgumentException.class,
            () -> LoraArguments.named(List.of("a=x.safetensors", "a=y.safetensors")));
    assertEquals("--lora names 'a' twice", twice.getMessage());
  }

  private static LoraArguments.FileUse only(String arg) {
    return LoraArguments.fileUses(List.of(arg)).getFirst();
  }

  private static void refused(String message, String arg) {
    InvalidRequestException e =
        assertThrows(InvalidRequestException.class, () -> LoraArguments.fileUses(List.of(arg)));
    assertTrue(e.getMessage().contains(message), e.getMessage());
  }
}

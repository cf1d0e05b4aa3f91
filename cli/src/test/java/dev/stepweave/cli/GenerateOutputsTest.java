package dev.stepweave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stepweave.media.Mp4Reader;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What {@code generate} writes and where: the format the extension names, no silent overwrite, the
 * metadata {@code info} reads back, and a {@code --prompts} batch on one model load.
 */
class GenerateOutputsTest {
  static final Path GOLDEN = Path.of(System.getProperty("stepweave.golden"));
  static final Path TINY = GOLDEN.resolve("wan21-tiny");
  static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path tmp;

  private static CliHarness generate(String... extra) {
    List<String> args =
        new ArrayList<>(
            List.of(
                "generate",
                "--model",
                TINY.toString(),
                "--backend",
                "cpu",
                "--size",
                "32x32",
                "--steps",
                "2"));
    args.addAll(List.of(extra));
    return CliHarness.run(args.toArray(String[]::new));
  }

  private static JsonNode info(Path file) throws IOException {
    var r = CliHarness.run("info", "--json", file.toString());
    assertEquals(0, r.exit(), r.err());
    return JSON.readTree(r.out());
  }

  @Test
  void theExtensionPicksTheFormat() throws IOException {
    Path mp4 = tmp.resolve("a.mp4");
    Path gif = tmp.resolve("a.gif");
    Path png = tmp.resolve("a.png");
    Path oneFrameMp4 = tmp.resolve("one.mp4");
    assertEquals(0, generate("red", "--frames", "5", "-o", mp4.toString()).exit());
    assertEquals(0, generate("red", "--frames", "5", "-o", gif.toString()).exit());
    assertEquals(0, generate("red", "--frames", "1", "-o", png.toString()).exit());
    assertEquals(0, generate("red", "--frames", "1", "-o", oneFrameMp4.toString()).exit());
    assertEquals("ftyp", new String(Files.readAllBytes(mp4), 4, 4));
    assertEquals(5, Mp4Reader.read(mp4).frames().dim(0));
    assertEquals("GIF89a", new String(Files.readAllBytes(gif), 0, 6));
    try (var in = ImageIO.createImageInputStream(gif.toFile())) {
      var reader = ImageIO.getImageReadersByFormatName("gif").next();
      reader.setInput(in);
      assertEquals(5, reader.getNumImages(true));
    }
    assertEquals(32, ImageIO.read(png.toFile()).getWidth());
    assertEquals((byte) 0x89, Files.readAllBytes(png)[0]);
    assertEquals(1, Mp4Reader.read(oneFrameMp4).frames().dim(0));
  }

  @Test
  void theMetadataRoundTripsThroughInfo() throws IOException {
    Path gif = tmp.resolve("meta.gif");
    var r =
        generate(
            "a red ball — bouncing",
            "--negative",
            "blurry",
            "--seed",
            "17",
            "--frames",
            "5",
            "--guidance",
            "4.5",
            "--sampler",
            "euler",
            "-o",
            gif.toString());
    assertEquals(0, r.exit(), r.err());
    JsonNode m = info(gif);
    assertEquals(StepweaveVersion.get(), m.get("stepweave").asText());
    assertEquals("wan21-tiny", m.get("model").asText());
    assertEquals("t2v", m.get("task").asText());
    assertEquals("a red ball — bouncing", m.get("prompt").asText());
    assertEquals("blurry", m.get("negative_prompt").asText());
    assertEquals(17, m.get("seed").asLong());
    assertEquals("euler", m.get("sampler").asText());
    assertEquals(2, m.get("steps").asInt());
    assertEquals(4.5, m.get("guidance").asDouble());
    assertEquals("32x32", m.get("size").asText());
    assertEquals(5, m.get("frames").asInt());
    assertTrue(m.get("adapters").isArray() && m.get("adapters").isEmpty(), m.toString());

    var text = CliHarness.run("info", gif.toString());
    assertEquals(0, text.exit(), text.err());
    assertTrue(text.out().contains("format           gif"), text.out());
    assertTrue(text.out().contains("prompt           a red ball — bouncing"), text.out());
    assertTrue(text.out().contains("seed             17"), text.out());
  }

  @Test
  void pngAndMp4CarryTheMetadataToo() throws IOException {
    Path png = tmp.resolve("m.png");
    Path mp4 = tmp.resolve("m.mp4");
    assertEquals(0, generate("cat", "--seed", "3", "--frames", "1", "-o", png.toString()).exit());
    assertEquals(0, generate("dog", "--seed", "4", "--frames", "5", "-o", mp4.toString()).exit());
    assertEquals("cat", info(png).get("prompt").asText());
    assertEquals("t2i", info(png).get("task").asText());
    assertEquals(3, info(png).get("seed").asLong());
    assertEquals("dog", info(mp4).get("prompt").asText());
    assertEquals(4, info(mp4).get("seed").asLong());
    assertEquals("unipc", info(mp4).get("sampler").asText());
  }

  @Test
  void anExistingOutputIsKeptUnlessForced() throws IOException {
    Path out = Files.writeString(tmp.resolve("taken.mp4"), "mine");
    var r = generate("red", "--frames", "5", "-o", out.toString());
    assertEquals(StepweaveCli.ExitCodes.USAGE, r.exit());
    assertEquals(
        "stepweave: output " + out + " exists (--force overwrites it, -o names another file)\n",
        r.err());
    assertEquals("mine", Files.readString(out));
    var forced = generate("red", "--frames", "5", "-o", out.toString(), "--force");
    assertEquals(0, forced.exit(), forced.err());
    assertEquals(5, Mp4Reader.read(out).frames().dim(0));
  }

  @Test
  void infoRefusesFilesWithoutMetadataInOneLine() throws IOException {
    Path plain = tmp.resolve("plain.png");
    ImageIO.write(new java.awt.image.BufferedImage(4, 4, 1), "png", plain.toFile());
    var r = CliHarness.run("info", plain.toString());
    assertEquals(StepweaveCli.ExitCodes.FAILURE, r.exit());
    assertEquals("stepweave: " + plain + ": a png file without Stepweave metadata\n", r.err());
    Path text = Files.writeString(tmp.resolve("notes.txt"), "hello");
    var t = CliHarness.run("info", text.toString());
    assertEquals(StepweaveCli.ExitCodes.FAILURE, t.exit());
    assertEquals("stepweave: " + text + ": not an MP4, GIF or PNG file\n", t.err());
  }

  @Test
  void aPromptsFileRunsOnOneModelLoadNamingOutputsByIndexAndSeed() throws IOException {
    Path prompts =
        Files.writeString(
            tmp.resolve("prompts.txt"),
            """
            a red ball

            {"prompt": "a blue cube", "seed": 9}
            {"prompt": "a green cone", "negative_prompt": "grey"}
            """);
    Path base = tmp.resolve("b.gif");
    var r =
        generate(
            "--prompts", prompts.toString(), "--seed", "5", "--frames", "5", "-o", base.toString());
    assertEquals(0, r.exit(), r.err());
    // One load: the model line is printed once, right after WanModel.load, then one request each.
    assertEquals(1, r.out().lines().filter(l -> l.startsWith("model   ")).count(), r.out());
    assertEquals(3, r.out().lines().filter(l -> l.startsWith("request ")).count(), r.out());
    Path first = tmp.resolve("b-1-seed5.gif");
    Path second = tmp.resolve("b-2-seed9.gif");
    Path third = tmp.resolve("b-3-seed5.gif");
    try (Stream<Path> files = Files.list(tmp)) {
      assertEquals(
          List.of(first, second, third, prompts).stream().sorted().toList(),
          files.sorted().toList());
    }
    assertEquals("a red ball", info(first).get("prompt").asText());
    assertEquals("a blue cube", info(second).get("prompt").asText());
    assertEquals(9, info(second).get("seed").asLong());
    assertEquals("a green cone", info(third).get("prompt").asText());
    assertEquals("grey", info(third).get("negative_prompt").asText());
    assertEquals(5, info(third).get("seed").asLong());
  }

  @Test
  void aBadLineOfAPromptsFileStopsTheBatchBeforeAnythingRuns() throws IOException {
    Path prompts =
        Files.writeString(tmp.resolve("p.txt"), "a red ball\n{\"prompt\": \"x\", \"sede\": 3}\n");
    var r = generate("--prompts", prompts.toString(), "-o", tmp.resolve("b.mp4").toString());
    assertEquals(StepweaveCli.ExitCodes.USAGE, r.exit());
    assertEquals(
        "stepweave: "
            + prompts
            + ":2: unknown field 'sede' (fields: prompt, negative_prompt, seed)\n",
        r.err());
    Path empty = Files.writeString(tmp.resolve("q.txt"), "a red ball\n{\"prompt\": \" \"}\n");
    var e = generate("--prompts", empty.toString(), "-o", tmp.resolve("b.mp4").toString());
    assertEquals(StepweaveCli.ExitCodes.USAGE, e.exit());
    assertEquals("stepweave: " + empty + ":2: prompt is empty\n", e.err());
    assertFalse(e.out().contains("model "), e.out());
    try (Stream<Path> files = Files.list(tmp)) {
      assertEquals(2, files.count(), "only the two prompt files");
    }
  }
}

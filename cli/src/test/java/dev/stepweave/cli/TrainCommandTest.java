package dev.stepweave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.models.wan.embedded.EmbeddedWan;
import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code stepweave train}: the command's refusals, its outputs, and serving what it wrote. */
class TrainCommandTest {
  @TempDir static Path home;
  @TempDir Path tmp;
  private static Path base;

  @BeforeAll
  static void embedded() {
    base = EmbeddedWan.ensure(home);
  }

  private Path config(String name, String extra) throws Exception {
    return Files.writeString(
        tmp.resolve(name + ".yaml"),
        "base: "
            + base
            + "\ncomponent: transformer\ndata: {type: shapes, clips: 2, seed: 1, frames: 5}\n"
            + "steps: 2\nbatch: 2\nlearning_rate: 1e-3\n"
            + extra
            + "output: "
            + name
            + "\n");
  }

  @Test
  void aBadConfigIsOneLineAndExit2BeforeAnythingLoads() throws Exception {
    Path bad = config("bad", "precision: f16\n");
    CliHarness r = CliHarness.run("train", "--config", bad.toString());

    assertEquals(2, r.exit(), r.err());
    assertEquals(1, r.errorLines(), r.err());
    assertTrue(
        r.err()
            .startsWith(
                "stepweave: config " + bad + ": 'precision' must be f32 or bf16, got 'f16'"),
        r.err());
    assertTrue(Files.notExists(tmp.resolve("bad")), "nothing written");

    // bf16 is a GPU's: on the CPU the run is refused in one line before it writes anything.
    Path bf16 = config("bf16", "precision: bf16\n");
    CliHarness onCpu = CliHarness.run("train", "--config", bf16.toString(), "--backend", "cpu");
    assertEquals(2, onCpu.exit(), onCpu.err());
    assertEquals(1, onCpu.errorLines(), onCpu.err());
    assertTrue(
        onCpu.err().startsWith("stepweave: precision: bf16 computes on a GPU (--backend cuda)"),
        onCpu.err());
    assertTrue(Files.notExists(tmp.resolve("bf16")), "nothing written");

    CliHarness missing = CliHarness.run("train", "--config", tmp.resolve("none.yaml").toString());
    assertEquals(2, missing.exit(), missing.err());
    assertTrue(missing.err().contains("cannot read"), missing.err());
  }

  @Test
  void trainsLogsPlotsAndWritesACheckpointThatGenerates() throws Exception {
    Path cfg = config("run", "checkpoint_every: 1\n");
    CliHarness r = CliHarness.run("train", "--config", cfg.toString());

    assertEquals(0, r.exit(), r.err());
    Path out = tmp.resolve("run");
    assertEquals(
        "trained 2 steps (from step 0); wrote " + out.resolve("model").toAbsolutePath() + "\n",
        r.out());
    assertTrue(r.err().contains("(full) on 2 samples, 2 steps of batch 2"), r.err());
    assertTrue(r.err().contains("step 2/2  loss "), r.err());
    assertTrue(r.err().contains(" it/s  ETA "), r.err());
    assertEquals(2, Files.readAllLines(out.resolve("loss.jsonl")).size());
    BufferedImage plot = ImageIO.read(out.resolve("loss.png").toFile());
    assertEquals(640, plot.getWidth());
    assertEquals(360, plot.getHeight());

    CliHarness again = CliHarness.run("train", "--config", cfg.toString());
    assertEquals(2, again.exit(), again.err());
    assertTrue(again.err().contains("holds a run already; pass --resume"), again.err());

    Path image = tmp.resolve("trained.png");
    CliHarness g =
        CliHarness.run(
            "generate",
            "--model",
            out.resolve("model").toString(),
            "--size",
            "64x64",
            "--frames",
            "1",
            "--steps",
            "2",
            "-o",
            image.toString(),
            "a red ball moving left on a black background");
    assertEquals(0, g.exit(), g.err());
    assertEquals(64, ImageIO.read(image.toFile()).getWidth());
  }

  @Test
  void aTrainedLoraServesInBothLayouts() throws Exception {
    Path cfg = config("lora", "method: {type: lora, rank: 2, targets: [to_q, to_v]}\n");
    assertEquals(0, CliHarness.run("train", "--config", cfg.toString()).exit());
    Path lora = tmp.resolve("lora").resolve("lora");
    for (String file : new String[] {"adapter_diffusers.safetensors", "adapter_wan.safetensors"}) {
      Path image = tmp.resolve(file + ".png");
      CliHarness g =
          CliHarness.run(
              "generate",
              "--model",
              base.toString(),
              "--lora",
              lora.resolve(file).toString(),
              "--size",
              "64x64",
              "--frames",
              "1",
              "--steps",
              "2",
              "-o",
              image.toString(),
              "a blue square moving up on a gray background");
      assertEquals(0, g.exit(), file + ": " + g.err());
      assertTrue(Files.size(image) > 0);
    }
  }
}

package dev.stepweave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code stepweave verify}: the golden passes with a line per output and tap; a broken checkpoint
 * is one line naming the file and tensor, a non-zero exit, and no stack trace unless --debug.
 */
class VerifyCommandTest {
  static final Path GOLDEN = Path.of(System.getProperty("stepweave.golden"));
  static final Path CHECKPOINT = GOLDEN.resolve("wan21-tiny");
  static final Path EXPECTED = GOLDEN.resolve("wan21-tiny-expected");

  @TempDir static Path tmp;
  static Path onlyDit;

  @BeforeAll
  static void ditOnlyReference() throws IOException {
    // The DiT recording alone keeps these error tests fast; the full set runs in models' tests.
    onlyDit = Files.createDirectories(tmp.resolve("dit-only"));
    Files.copy(EXPECTED.resolve("dit.safetensors"), onlyDit.resolve("dit.safetensors"));
  }

  static Path copyCheckpoint(String name) throws IOException {
    Path dst = tmp.resolve(name);
    try (Stream<Path> files = Files.walk(CHECKPOINT)) {
      for (Path src : files.sorted(Comparator.naturalOrder()).toList()) {
        Path to = dst.resolve(CHECKPOINT.relativize(src).toString());
        if (Files.isDirectory(src)) {
          Files.createDirectories(to);
        } else {
          Files.copy(src, to);
          to.toFile().setWritable(true);
        }
      }
    }
    return dst;
  }

  @Test
  void theGoldenVerifiesAndListsEveryOutputAndTap() {
    var r =
        CliHarness.run(
            "verify", "--checkpoint", CHECKPOINT.toString(), "--reference", EXPECTED.toString());
    assertEquals(0, r.exit(), r.err());
    for (String name :
        new String[] {
          "dit/out",
          "dit/block_1",
          "dit/rope_sin",
          "umt5/last_hidden_state",
          "vae/decoded",
          "vae/latent_mean",
          "sched_unipc_20/trajectory",
          "sched_euler_6/sigmas",
          "torch_cpu_randn/seed0_7",
          "pipeline/frames",
          "pipeline/step_latents",
          "pipeline/prompt_embeds"
        }) {
      assertTrue(
          r.out().lines().anyMatch(l -> l.startsWith("PASS " + name + " ")),
          name + " missing:\n" + r.out());
    }
    assertTrue(r.out().contains("42 of 42 outputs and taps within tolerance"), r.out());
    assertTrue(r.out().contains("no divergence"), r.out());
  }

  @Test
  void aTruncatedWeightsFileIsOneLineNamingTheFile() throws IOException {
    Path ckpt = copyCheckpoint("truncated");
    Path weights = ckpt.resolve("transformer/diffusion_pytorch_model.safetensors");
    byte[] bytes = Files.readAllBytes(weights);
    Files.write(weights, java.util.Arrays.copyOf(bytes, bytes.length - 100));
    var r =
        CliHarness.run(
            "verify", "--checkpoint", ckpt.toString(), "--reference", onlyDit.toString());
    assertEquals(1, r.exit());
    assertEquals(1, r.errorLines(), r.err());
    assertFalse(r.err().contains("\tat "), r.err());
    assertTrue(r.err().contains(weights.toString()), r.err());
    assertTrue(r.err().contains("truncated"), r.err());
  }

  @Test
  void aMissingTensorIsOneLineNamingFileAndTensor() throws IOException {
    Path ckpt = copyCheckpoint("missing");
    Path weights = ckpt.resolve("transformer/diffusion_pytorch_model.safetensors");
    var tensors = new java.util.HashMap<String, dev.stepweave.tensor.Tensor>();
    try (var f = dev.stepweave.tensor.io.SafetensorsFile.open(weights)) {
      for (String k : f.keys()) {
        if (!k.equals("blocks.1.attn2.to_k.weight")) {
          tensors.put(k, f.loadF32(k));
        }
      }
    }
    dev.stepweave.tensor.io.Safetensors.write(weights, tensors, java.util.Map.of());
    var r =
        CliHarness.run(
            "verify", "--checkpoint", ckpt.toString(), "--reference", onlyDit.toString());
    assertEquals(1, r.exit());
    assertEquals(1, r.errorLines(), r.err());
    assertTrue(r.err().contains("missing tensor 'blocks.1.attn2.to_k.weight'"), r.err());
    assertTrue(r.err().contains(weights.toString()), r.err());
  }

  @Test
  void configDimsThatDisagreeWithTheWeightsAreOneLine() throws IOException {
    Path ckpt = copyCheckpoint("dims");
    Path config = ckpt.resolve("transformer/config.json");
    Files.writeString(
        config, Files.readString(config).replace("\"ffn_dim\": 48", "\"ffn_dim\": 64"));
    var r =
        CliHarness.run(
            "verify", "--checkpoint", ckpt.toString(), "--reference", onlyDit.toString());
    assertEquals(1, r.exit());
    assertEquals(1, r.errorLines(), r.err());
    assertTrue(r.err().contains("blocks.0.ffn.net.0.proj.weight"), r.err());
    assertTrue(r.err().contains("[48, 32]") && r.err().contains("[64, 32]"), r.err());
    // --debug adds the stack trace for developers.
    var debug =
        CliHarness.run(
            "verify",
            "--debug",
            "--checkpoint",
            ckpt.toString(),
            "--reference",
            onlyDit.toString());
    assertEquals(1, debug.exit());
    assertTrue(debug.err().lines().count() > 3, debug.err());
    assertTrue(debug.err().contains("\tat "), debug.err());
  }

  @Test
  void aMissingReferenceOrCheckpointIsOneLine() {
    var r =
        CliHarness.run(
            "verify",
            "--checkpoint",
            CHECKPOINT.toString(),
            "--reference",
            tmp.resolve("nope").toString());
    assertEquals(1, r.exit());
    assertEquals(
        "stepweave: reference directory not found: " + tmp.resolve("nope"), r.err().strip());
    var c =
        CliHarness.run(
            "verify",
            "--checkpoint",
            tmp.resolve("nope").toString(),
            "--reference",
            onlyDit.toString());
    assertEquals(1, c.exit());
    assertEquals(1, c.errorLines(), c.err());
    assertFalse(c.err().contains("Exception"), c.err());
  }
}

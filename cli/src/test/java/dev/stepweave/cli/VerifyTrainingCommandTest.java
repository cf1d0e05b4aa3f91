package dev.stepweave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code stepweave verify} on the training references: the loss, every gradient, the AdamW updates
 * the LoRA gradients and the VAE reconstruction gradients pass on {@code wan21-lora-tiny}; a
 * recording whose inputs are missing is an ERROR line naming them and a non-zero exit.
 */
class VerifyTrainingCommandTest {
  private static final Path CHECKPOINT = VerifyCommandTest.GOLDEN.resolve("wan21-lora-tiny");
  private static final Path EXPECTED = VerifyCommandTest.GOLDEN.resolve("wan21-train-expected");

  @TempDir Path tmp;

  @Test
  void theTrainingReferencesVerify() {
    var r =
        CliHarness.run(
            "verify", "--checkpoint", CHECKPOINT.toString(), "--reference", EXPECTED.toString());
    assertEquals(0, r.exit(), r.out() + r.err());
    for (String name :
        new String[] {
          "dit_train/loss",
          "dit_train/pred",
          "dit_train/grad.hidden_states",
          "dit_train/grad.patch_embedding.weight",
          "adamw_3steps/losses",
          "adamw_3steps/update.proj_out.weight",
          "lora_train/loss",
          "lora_train/grad.blocks.1.ffn.net.2.lora_B.weight",
          "vae_train/reconstruction",
          "vae_train/loss",
          "vae_train/grad.decoder.norm_out.gamma"
        }) {
      assertTrue(
          r.out().lines().anyMatch(l -> l.startsWith("PASS " + name + " ")),
          name + " missing:\n" + r.out());
    }
    assertFalse(r.out().contains("not checked"), r.out());
    assertTrue(r.out().contains("no divergence"), r.out());
  }

  @Test
  void anOptimiserRecordingWithoutItsInputsIsAnError() throws IOException {
    Files.copy(
        EXPECTED.resolve("adamw_3steps.safetensors"), tmp.resolve("adamw_3steps.safetensors"));
    var r =
        CliHarness.run(
            "verify", "--checkpoint", CHECKPOINT.toString(), "--reference", tmp.toString());
    assertEquals(1, r.exit(), r.out());
    assertTrue(
        r.out()
            .contains(
                "ERROR adamw_3steps.safetensors: its inputs are dit_train's, and there is no "
                    + tmp.resolve("dit_train.safetensors")
                    + " beside it"),
        r.out());
  }
}

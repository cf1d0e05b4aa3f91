package dev.stepweave.models;

import dev.stepweave.core.card.ParitySpec;
import dev.stepweave.core.parity.Tolerance;
import dev.stepweave.models.wan.WanCards;
import dev.stepweave.tensor.io.DiffusersDirectory;
import java.nio.file.Path;

/**
 * The parity bounds the golden tests hold components to, read from the golden checkpoint's card —
 * the one place they live — so a test never keeps its own copy.
 */
public final class GoldenBounds {
  private static final ParitySpec PARITY =
      WanCards.cardFor(
              DiffusersDirectory.open(
                  Path.of(System.getProperty("stepweave.golden")).resolve("wan21-tiny")))
          .parity();

  private GoldenBounds() {}

  /** The card's tolerance for {@code output} ("dit", "vae", …). */
  public static Tolerance tolerance(String output) {
    return PARITY.tolerance(output);
  }

  /** The card's max abs error bound for {@code output}. */
  public static double maxAbs(String output) {
    return tolerance(output).bound();
  }
}

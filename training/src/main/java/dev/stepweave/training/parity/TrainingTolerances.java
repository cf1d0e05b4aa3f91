package dev.stepweave.training.parity;

import dev.stepweave.core.parity.Tolerance;

/**
 * The bounds of the training references ({@code golden/README.md}, wan21-train-expected), float32
 * CPU against torch's float32 CPU autograd. They are relative, which a card's parity spec (max abs
 * bounds) cannot express, so the training plane keeps them here, in one place.
 */
public final class TrainingTolerances {
  /** The loss: relative error ≤ 1e-5. */
  public static final Tolerance LOSS = new Tolerance.RelativeL2(1e-5);

  /** Every gradient: relative L2 ≤ 1e-4 per tensor. */
  public static final Tolerance GRADIENT = new Tolerance.RelativeL2(1e-4);

  /** The forward's prediction: the DiT's own bound, max abs ≤ 1e-4. */
  public static final Tolerance PREDICTION = new Tolerance.MaxAbs(1e-4);

  /** The VAE's reconstruction: the VAE's own bound, max abs ≤ 5e-4. */
  public static final Tolerance RECONSTRUCTION = new Tolerance.MaxAbs(5e-4);

  /** The objective's inputs (x_t, the target): elementwise arithmetic, max abs ≤ 1e-6. */
  public static final Tolerance OBJECTIVE = new Tolerance.MaxAbs(1e-6);

  /** AdamW's update (parameter after the steps minus before), per tensor: relative L2 ≤ 1e-3. */
  public static final Tolerance UPDATE = new Tolerance.RelativeL2(1e-3);

  /**
   * AdamW's update where the first step's gradient exceeds {@link #COMPARABLE_GRADIENT} in
   * magnitude: max abs ≤ 1e-5 (elsewhere Adam's normalised step turns noise-level gradients into
   * full-size updates, so those elements are not comparable).
   */
  public static final Tolerance UPDATE_MAX_ABS = new Tolerance.MaxAbs(1e-5);

  public static final double COMPARABLE_GRADIENT = 1e-6;

  private TrainingTolerances() {}
}

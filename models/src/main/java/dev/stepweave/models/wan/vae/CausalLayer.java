package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Tensor;

/** One stage of the encoder or decoder, run chunk by chunk with the call's {@link CausalCache}. */
interface CausalLayer {
  Tensor apply(Tensor x, CausalCache cache);

  /**
   * Whether the output has another number of frames than the input (a temporal up- or downsampler).
   * A layer that keeps it maps frames one to one, causally, so a run of such layers may take a
   * chunk's frames a few at a time and give the same frames.
   */
  default boolean changesFrameCount() {
    return false;
  }
}

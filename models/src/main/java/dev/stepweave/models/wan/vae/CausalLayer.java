package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Tensor;

/** One stage of the encoder or decoder, run chunk by chunk with the call's {@link CausalCache}. */
interface CausalLayer {
  Tensor apply(Tensor x, CausalCache cache);
}

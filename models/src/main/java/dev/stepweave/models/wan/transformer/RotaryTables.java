package dev.stepweave.models.wan.transformer;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;

/**
 * Rotary cos/sin for one token grid, {@code [L, headDim/2]}: one angle per interleaved pair, the
 * layout {@link Backend#rope} takes.
 */
record RotaryTables(Tensor cos, Tensor sin) {

  /**
   * A table in the reference implementation's layout {@code [1, L, 1, headDim]}, where every angle
   * appears twice (once per element of its pair). Only parity taps need it.
   */
  static Tensor pairRepeated(Backend backend, Tensor table) {
    int length = table.dim(0);
    int pairs = table.dim(1);
    Tensor repeated = table.unsqueeze(2).expand(length, pairs, 2);
    return backend.contiguous(repeated).reshape(1, length, 1, 2 * pairs);
  }
}

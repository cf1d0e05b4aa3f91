package dev.stepweave.core.parity;

import dev.stepweave.tensor.Tensor;

/**
 * Receives named intermediate tensors ("taps") from a component's forward pass: the parity aligner
 * records or compares them, an activation trace logs them. Components call {@link #tap} at the
 * points a reference recording names (e.g. "patch_embedding", "block_0"); with {@link #NONE} the
 * calls cost nothing. A sink reads a tapped tensor during the call only and copies what it keeps:
 * the component may release the tensor's memory as soon as the call returns.
 */
@FunctionalInterface
public interface TapSink {
  TapSink NONE = (name, value) -> {};

  void tap(String name, Tensor value);

  /** Whether anyone listens; lets a component skip work done only to produce a tap. */
  default boolean enabled() {
    return this != NONE;
  }
}

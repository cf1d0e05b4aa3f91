package dev.stepweave.cuda;

import dev.stepweave.core.parity.TapSink;
import dev.stepweave.tensor.Tensor;

/**
 * Releases a Wan DiT forward's activations block by block, deterministically: the forward taps
 * {@code context} just before its first block and {@code block_<i>} after each block, so at each
 * block tap everything allocated since (that block's intermediates and the previous block's output)
 * is dead except the tapped residual stream. Tensors made before the blocks (rotary tables,
 * conditions, text context) are outside the scope and stay. After the forward, {@link #finish}
 * releases the tail's intermediates, keeping the output.
 */
final class BlockScopes implements TapSink {
  private final CudaBackend gpu;
  private MemoryScope scope;

  BlockScopes(CudaBackend gpu) {
    this.gpu = gpu;
  }

  @Override
  public void tap(String name, Tensor value) {
    if (name.equals("context")) {
      scope = gpu.openScope();
    } else if (name.startsWith("block_")) {
      scope.releaseExcept(value);
    }
  }

  /** Taps only mark block boundaries: the forward need not compute tap-only tensors. */
  @Override
  public boolean enabled() {
    return false;
  }

  /** Ends the forward: releases everything of the scope but {@code output}. */
  void finish(Tensor output) {
    scope.releaseExcept(output);
    scope.close();
    scope = null;
  }
}

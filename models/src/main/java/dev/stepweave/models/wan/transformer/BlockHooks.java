package dev.stepweave.models.wan.transformer;

import dev.stepweave.tensor.Tensor;

/**
 * Lets an interceptor decide how the transformer's blocks run: it may run them all, or replace a
 * range of them by a cached residual. {@link #NONE} runs every block, and the transformer then
 * takes its plain path, so an unused hook costs nothing.
 */
@FunctionalInterface
public interface BlockHooks {
  BlockHooks NONE = (x, blocks, count) -> blocks.run(0, count, x);

  /**
   * Produces the hidden states after all {@code count} blocks.
   *
   * @param x the hidden states entering block 0, {@code [B, L, dim]}
   * @param blocks runs blocks {@code [from, to)} on a hidden state
   */
  Tensor runBlocks(Tensor x, BlockRunner blocks, int count);

  /** Runs a contiguous range of the transformer's blocks (conditioning already bound). */
  @FunctionalInterface
  interface BlockRunner {
    Tensor run(int from, int to, Tensor x);
  }
}

package dev.stepweave.models.wan.transformer;

import java.util.Map;

/**
 * A loaded adapter as the transformer sees it: updates by layer name ({@code blocks.0.attn1.to_q})
 * and an identity that changes whenever its resident tensors do (a graph recorded with them reads
 * their addresses).
 */
public interface LayerAdapter {
  Map<String, LayerUpdate> layers();

  /** Who this adapter is, down to the load that put its tensors where they are. */
  String identity();
}

package dev.stepweave.core.loop;

import java.util.List;

/**
 * The shape facts that decide whether two work units can share a batched call and a captured graph:
 * a kind-specific tag plus the dimensions that matter.
 */
public record ShapeSignature(String tag, List<Integer> dims) {
  public ShapeSignature {
    dims = List.copyOf(dims);
  }

  public static ShapeSignature of(String tag, int... dims) {
    return new ShapeSignature(tag, java.util.Arrays.stream(dims).boxed().toList());
  }

  @Override
  public String toString() {
    return tag + dims;
  }
}

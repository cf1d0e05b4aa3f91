package dev.stepweave.core.loop;

/**
 * The computation a work plan describes, bound to its inputs. A loop's {@code next} builds it but
 * never runs it: only the runtime's executor calls {@link #run}, which is where admission, batching
 * and placement happen.
 */
@FunctionalInterface
public interface WorkCall {
  StepResult run();

  /**
   * The component of its instance's {@link ModelInstance#swappedComponents} this call computes
   * with, which must be awake while it runs; empty (the default) when it needs none of them.
   */
  default java.util.Optional<String> awakeComponent() {
    return java.util.Optional.empty();
  }
}

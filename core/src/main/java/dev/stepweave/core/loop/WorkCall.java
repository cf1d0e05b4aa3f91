package dev.stepweave.core.loop;

/**
 * The computation a work plan describes, bound to its inputs. A loop's {@code next} builds it but
 * never runs it: only the runtime's executor calls {@link #run}, which is where admission, batching
 * and placement happen.
 */
@FunctionalInterface
public interface WorkCall {
  StepResult run();
}

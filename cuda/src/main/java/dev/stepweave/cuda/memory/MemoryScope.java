package dev.stepweave.cuda.memory;

import dev.stepweave.tensor.Tensor;
import java.util.Arrays;

/**
 * Deterministic release of activations: collects the device blocks a {@link
 * dev.stepweave.cuda.CudaBackend} allocates while it is open, and gives them back to the
 * allocator's cache on {@link #releaseExcept} instead of waiting for the garbage collector. The
 * caller states what is still needed; any other tensor allocated in the scope must not be used
 * afterwards (its memory is reused). Scopes nest; closing one (innermost first) releases nothing
 * and hands what it still holds to the enclosing scope.
 */
public final class MemoryScope implements AutoCloseable {
  private final DeviceAllocator.Scope scope;

  private MemoryScope(DeviceAllocator.Scope scope) {
    this.scope = scope;
  }

  /** Opens a scope over {@code allocator}'s blocks, nested in its open one if any. */
  public static MemoryScope open(DeviceAllocator allocator) {
    return new MemoryScope(allocator.openScope());
  }

  /**
   * Releases every tensor allocated in this scope except {@code keep} (views count by their
   * storage); the kept ones stay in the scope, so a later call may release them.
   */
  public void releaseExcept(Tensor... keep) {
    scope.releaseExcept(Arrays.stream(keep).map(Tensor::storage).toList());
  }

  @Override
  public void close() {
    scope.close();
  }
}

package dev.stepweave.cuda;

import dev.stepweave.tensor.Tensor;
import java.util.Arrays;

/**
 * Deterministic release of activations: collects the device blocks a {@link CudaBackend} allocates
 * while it is open, and gives them back to the allocator's cache on {@link #releaseExcept} instead
 * of waiting for the garbage collector. The caller states what is still needed; any other tensor
 * allocated in the scope must not be used afterwards (its memory is reused). Scopes nest; closing
 * one (innermost first) releases nothing and hands what it still holds to the enclosing scope.
 */
public final class MemoryScope implements AutoCloseable {
  private final DeviceAllocator.Scope scope;

  MemoryScope(DeviceAllocator.Scope scope) {
    this.scope = scope;
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

package dev.stepweave.models.wan;

import dev.stepweave.core.loop.ModelInstance;
import dev.stepweave.core.runtime.PoolRecovery;
import dev.stepweave.tensor.Backend;
import java.nio.file.Path;
import java.util.function.Supplier;

/**
 * Rebuilds a Wan pool after a pool-fatal fault: closes the broken instance (its weights' device
 * memory, text-embedding and adapter caches) and its backend (on CUDA that resets the context, with
 * every graph and module recorded in it), opens a new backend and loads the weights again from the
 * checkpoint on the host, placed as the broken one was loaded (its {@link WanLoadOptions}). Nothing
 * of the broken pool is reused; the engine then resumes the running requests from their last
 * checkpoints on the new instance.
 */
public final class WanPoolRecovery implements PoolRecovery {
  private final Path checkpoint;
  private final Supplier<Backend> backends;
  private final WanLoadOptions options;

  /**
   * @param checkpoint the diffusers folder the pool was loaded from
   * @param backends opens a new backend on the pool's device
   * @param options the options the pool was loaded with
   */
  public WanPoolRecovery(Path checkpoint, Supplier<Backend> backends, WanLoadOptions options) {
    this.checkpoint = checkpoint;
    this.backends = backends;
    this.options = options;
  }

  @Override
  public ModelInstance reinitialise(ModelInstance broken, Throwable cause) {
    if (broken instanceof WanModel wan) {
      closeQuietly(wan);
    }
    if (broken.backend() instanceof AutoCloseable backend) {
      closeQuietly(backend);
    }
    return WanModel.load(checkpoint, backends.get(), options);
  }

  private static void closeQuietly(AutoCloseable c) {
    try {
      c.close();
    } catch (Exception e) {
      // A broken device may refuse an orderly close; what it held goes with its context.
      System.err.println("stepweave: closing the broken pool: " + e.getMessage());
    }
  }
}

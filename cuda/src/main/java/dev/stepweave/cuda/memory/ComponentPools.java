package dev.stepweave.cuda.memory;

import dev.stepweave.cuda.driver.CudaContext;
import dev.stepweave.tensor.ComponentMemory;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Storage;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The weights of one backend's model components, each in a {@link VirtualMemoryPool} of its own
 * (see {@code Backend.loadingComponent}). A pool reserves address space for the whole device, so it
 * grows chunk by chunk and never moves: physical memory follows what is loaded into it. While a
 * load runs, the backend takes every new tensor from that component's pool; pool memory is never
 * recycled by the caching allocator (it has no block for such an address) and goes back to the
 * driver only when the component is released.
 *
 * <p>A load fills its pool from the thread that runs it: allocations other threads make meanwhile
 * (a caller downloading a result) come from the caching allocator, as always. The report may be
 * read from any thread.
 */
public final class ComponentPools implements AutoCloseable {
  private final CudaContext context;
  private final Device device;
  private final Map<String, VirtualMemoryPool> pools = new LinkedHashMap<>();
  // The pool the calling thread's load fills, if any.
  private final ThreadLocal<VirtualMemoryPool> loading = new ThreadLocal<>();

  public ComponentPools(CudaContext context, Device device) {
    this.context = context;
    this.device = device;
  }

  /** Runs {@code load} with {@code component}'s pool (made now if new) taking new tensors. */
  public <T> T loading(String component, Supplier<T> load) {
    context.bind();
    VirtualMemoryPool pool;
    synchronized (this) {
      pool = pools.get(component);
      if (pool == null) {
        // Address space only: physical memory is mapped as the load fills the pool.
        pool = new VirtualMemoryPool(component, context, context.memoryInfo()[1]);
        pools.put(component, pool);
      }
    }
    if (pool.asleep()) {
      throw new IllegalStateException(
          "component '" + component + "' is asleep; wake it before loading into it");
    }
    VirtualMemoryPool outer = loading.get();
    loading.set(pool);
    try {
      return load.get();
    } finally {
      loading.set(outer);
    }
  }

  /**
   * Storage of {@code bytes} from the pool the calling thread is loading into, or null when it is
   * not loading one.
   */
  Storage allocateWhileLoading(long bytes) {
    VirtualMemoryPool pool = loading.get();
    return pool == null ? null : storage(pool, bytes);
  }

  /**
   * Storage of {@code bytes} from the pool that holds {@code address}, or null when no pool does
   * (the address is the caching allocator's).
   */
  synchronized Storage allocateBeside(long address, long bytes) {
    for (VirtualMemoryPool pool : pools.values()) {
      if (pool.contains(address)) {
        return storage(pool, bytes);
      }
    }
    return null;
  }

  private Storage storage(VirtualMemoryPool pool, long bytes) {
    long at = pool.allocate(bytes);
    return new Storage(MemorySegment.ofAddress(at).reinterpret(bytes), device);
  }

  public synchronized VirtualMemoryPool pool(String component) {
    VirtualMemoryPool pool = pools.get(component);
    if (pool == null) {
      throw new IllegalArgumentException(
          "no component '"
              + component
              + "' was loaded on this device (loaded: "
              + pools.keySet()
              + ")");
    }
    return pool;
  }

  // Under the lock so that a report never sees a pool halfway through.
  public synchronized void sleep(String component) {
    pool(component).sleep();
  }

  public synchronized void wake(String component) {
    pool(component).wake();
  }

  /** Frees {@code component}'s pool; nothing when there is none. */
  public void release(String component) {
    VirtualMemoryPool pool;
    synchronized (this) {
      pool = pools.remove(component);
    }
    if (pool != null) {
      pool.close();
    }
  }

  /** Every pool's figures, in load order. */
  public synchronized List<ComponentMemory> report() {
    List<ComponentMemory> out = new ArrayList<>();
    for (VirtualMemoryPool p : pools.values()) {
      out.add(
          new ComponentMemory(
              p.component(), p.reservedBytes(), p.awakeBytes(), p.usedBytes(), p.asleep()));
    }
    return out;
  }

  /** Frees every pool. */
  @Override
  public void close() {
    for (String component : List.copyOf(pools.keySet())) {
      release(component);
    }
  }
}

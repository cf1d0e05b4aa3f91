package dev.stepweave.cuda.memory;

import dev.stepweave.cuda.driver.CudaContext;
import dev.stepweave.cuda.driver.CudaException;
import dev.stepweave.cuda.driver.Driver;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Storage;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.ref.Cleaner;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;

/**
 * A caching allocator for activations. A tensor's block comes back in one of two ways: explicitly
 * ({@link #release}, or a {@link Scope} ending) as soon as the caller knows it is dead, or through
 * a {@link Cleaner} when its storage becomes unreachable and the garbage collector notices. Either
 * way the block is reused for the next request of the same size class. Reuse without
 * synchronisation is safe because all work runs on one stream in issue order: any kernel still
 * reading the old tensor runs before the new owner's. Blocks are returned to the driver only when
 * an allocation fails, after a garbage collection. While a CUDA graph is recorded, blocks come from
 * and go back to that graph's own {@link GraphPool} instead.
 *
 * <p>Any thread may allocate and release (a caller downloading a result while the engine's thread
 * works on): the cache is guarded by this allocator's lock. What one thread opens — a {@link
 * Scope}, a graph's recording — collects that thread's blocks only, so another thread's temporary
 * is never released with a step or recorded into a graph.
 */
public final class DeviceAllocator {
  private static final Cleaner CLEANER = Cleaner.create();
  private static final long SMALL = 1 << 20;
  private static final long LARGE_ROUNDING = 2 << 20;
  private static final long SMALL_ROUNDING = 512;
  // While recording, freed blocks return only through the garbage collector unless the body
  // releases them explicitly: collect after this many fresh bytes so the pool reuses dead blocks.
  private static final long GRAPH_COLLECT_BYTES = 2L << 30;

  /**
   * One device block; {@code returned} makes the explicit and the cleaner's return exclusive. Its
   * {@code pool} is the graph pool it came from, null for the shared cache.
   */
  private static final class Block {
    final long ptr;
    final long size;
    final GraphPool pool;
    final AtomicBoolean returned = new AtomicBoolean();
    // Where it was allocated, when a census is on (null otherwise).
    final String site;

    Block(long ptr, long size, GraphPool pool, String site) {
      this.ptr = ptr;
      this.size = size;
      this.pool = pool;
      this.site = site;
    }
  }

  /**
   * The memory of one recorded graph. While the graph is captured every allocation comes from this
   * pool, and a block freed then returns to this pool only: the graph has recorded its addresses,
   * so no other work may be given them while the graph lives. Reuse inside the capture is safe for
   * the same reason as on the stream: the recording replays in issue order. Closing (with the
   * graph) gives all of its memory back to the driver; blocks still referenced become invalid.
   */
  public final class GraphPool implements AutoCloseable {
    private final Map<Long, ArrayDeque<Long>> free = new HashMap<>();
    private final Map<Long, Long> fromDriver = new HashMap<>();
    private long bytes;
    private long sinceCollection;
    private boolean closed;

    /** Bytes this pool holds from the driver. */
    public long bytes() {
      return bytes;
    }

    // Under the allocator's lock (from allocate).
    private long take(long size) {
      drainReturned();
      Long reused = pop(size);
      if (reused == null && sinceCollection >= GRAPH_COLLECT_BYTES) {
        sinceCollection = 0;
        collect();
        reused = pop(size);
      }
      if (reused != null) {
        return reused;
      }
      long ptr;
      try {
        ptr = fresh(size);
      } catch (CudaException e) {
        if (e.status() != Driver.CUDA_ERROR_OUT_OF_MEMORY) {
          throw e;
        }
        collect();
        reused = pop(size);
        if (reused != null) {
          return reused;
        }
        if (context.isCapturing()) {
          // The shared cache cannot be given back now (that waits for the stream, which records).
          throw new CudaException(
              "cuMemAlloc_v2",
              e.status(),
              "out of device memory while recording a CUDA graph whose pool holds "
                  + bytes
                  + " bytes");
        }
        // Before the capture begins (the static inputs) the shared cache can still be given back,
        // and an eager warm-up may have filled the device with it.
        releaseCached();
        ptr = fresh(size);
      }
      fromDriver.put(ptr, size);
      bytes += size;
      sinceCollection += size;
      return ptr;
    }

    private Long pop(long size) {
      ArrayDeque<Long> blocks = free.get(size);
      return blocks == null || blocks.isEmpty() ? null : blocks.pop();
    }

    /** Waits for the stream, then frees every block of this pool. */
    @Override
    public void close() {
      synchronized (DeviceAllocator.this) {
        closeLocked();
      }
    }

    private void closeLocked() {
      if (closed) {
        return;
      }
      if (capturing == this) {
        throw new IllegalStateException("closing the pool of a graph being recorded");
      }
      drainReturned();
      context.synchronize();
      closed = true;
      for (var it = live.values().iterator(); it.hasNext(); ) {
        Block b = it.next();
        if (b.pool == this) {
          b.returned.set(true);
          liveBytes -= b.size;
          it.remove();
        }
      }
      for (Map.Entry<Long, Long> e : fromDriver.entrySet()) {
        long ptr = e.getKey();
        Driver.call("cuMemFree_v2", () -> (int) Driver.cuMemFree_v2.invokeExact(ptr));
        reservedBytes -= e.getValue();
      }
      fromDriver.clear();
      free.clear();
      bytes = 0;
    }
  }

  /**
   * The blocks allocated while it is the innermost open scope. {@link #releaseExcept} gives all of
   * them back but the kept ones, which stay in the scope (so the next call may release them).
   * Scopes nest: closing one (innermost first) releases nothing and hands what is left to the
   * enclosing scope, which may release it later; with none, the cleaner takes it back.
   */
  final class Scope implements AutoCloseable {
    private final Scope parent;
    private List<Block> blocks = new ArrayList<>();

    private Scope(Scope parent) {
      this.parent = parent;
    }

    private void add(Block b) {
      blocks.add(b);
    }

    /** Releases every block of this scope not under one of {@code keep}'s storages. */
    void releaseExcept(List<Storage> keep) {
      List<Block> kept = new ArrayList<>();
      for (Block b : blocks) {
        if (keep.stream().anyMatch(s -> s.segment().address() == b.ptr)) {
          kept.add(b);
        } else {
          giveBack(b);
        }
      }
      blocks = kept;
    }

    @Override
    public void close() {
      if (scope.get() != this) {
        throw new IllegalStateException(
            "closing a scope that is not the calling thread's innermost open one");
      }
      scope.set(parent);
      if (parent != null) {
        parent.blocks.addAll(blocks);
      }
      blocks = List.of();
    }
  }

  /**
   * The blocks one piece of state keeps between the steps that update it (see {@code
   * Backend.StepMemory}). Not a scope: other work, scopes included, may run between its steps.
   */
  public final class Holding {
    private List<Block> blocks = new ArrayList<>();

    /**
     * Runs {@code body} in a fresh scope, then gives back every block that scope collected or this
     * holding kept, except those under {@code survivors}' storages (asked after the body), which it
     * keeps instead of handing them to the enclosing scope. A body that throws releases nothing.
     */
    public void step(Runnable body, Supplier<? extends Collection<Storage>> survivors) {
      List<Block> made;
      try (Scope inner = openScope()) {
        body.run();
        made = inner.blocks;
        inner.blocks = new ArrayList<>();
      }
      Set<Long> keep = new HashSet<>();
      for (Storage s : survivors.get()) {
        keep.add(s.segment().address());
      }
      List<Block> kept = new ArrayList<>();
      for (List<Block> from : List.of(blocks, made)) {
        for (Block b : from) {
          if (b.returned.get()) {
            continue; // the cleaner took it back: nothing refers to it
          }
          if (keep.contains(b.ptr)) {
            kept.add(b);
          } else {
            giveBack(b);
          }
        }
      }
      blocks = kept;
    }

    /**
     * Hands every block this holding kept to the calling thread's innermost open scope (none open:
     * to the cleaner), which then releases them with its own.
     */
    public void end() {
      Scope open = scope.get();
      if (open != null) {
        blocks.stream().filter(b -> !b.returned.get()).forEach(open::add);
      }
      blocks = new ArrayList<>();
    }
  }

  private final Device device;
  private final CudaContext context;
  private final Map<Long, ArrayDeque<Long>> cached = new HashMap<>();
  private final Map<Long, Block> live = new HashMap<>();
  // Filled by the cleaner thread, drained under the lock by an allocating thread.
  private final ConcurrentLinkedQueue<Block> returned = new ConcurrentLinkedQueue<>();
  // Each thread's innermost open scope.
  private final ThreadLocal<Scope> scope = new ThreadLocal<>();
  // The pool a graph recording on capturingThread takes from (the other threads keep the cache).
  private GraphPool capturing;
  private Thread capturingThread;
  private long reservedBytes;
  private long peakReservedBytes;
  private long liveBytes;
  private long peakLiveBytes;
  private boolean census;
  private long censusBytes;
  private Map<String, long[]> censusAtPeak = Map.of();

  public DeviceAllocator(Device device, CudaContext context) {
    this.device = device;
    this.context = context;
  }

  /** A block of at least {@code bytes} wrapped as storage, recycled when unreachable. */
  public Storage allocate(long bytes) {
    return allocate(bytes, true);
  }

  /**
   * Like {@link #allocate} but never collected by the open scope: for caches whose entries outlive
   * the scope they are made in, and come back only through the cleaner.
   */
  /** Whether a graph records on this thread now (its blocks come from that graph's pool). */
  public synchronized boolean capturing() {
    return capturingThread == Thread.currentThread();
  }

  public Storage allocateUnscoped(long bytes) {
    return allocate(bytes, false);
  }

  private Storage allocate(long bytes, boolean scoped) {
    context.bind();
    long size = sizeClass(Math.max(bytes, 1));
    String site = census ? site() : null;
    Block block;
    synchronized (this) {
      GraphPool pool = capturingThread == Thread.currentThread() ? capturing : null;
      block = new Block(pool == null ? take(size) : pool.take(size), size, pool, site);
      liveBytes += size;
      peakLiveBytes = Math.max(peakLiveBytes, liveBytes);
      live.put(block.ptr, block);
      // A census of every new high would be quadratic while memory grows: one per 64 MB more.
      if (census && liveBytes > censusBytes + (64L << 20)) {
        takeCensus();
      }
    }
    Scope open = scoped ? scope.get() : null;
    if (open != null) {
      open.add(block);
    }
    Storage storage = new Storage(MemorySegment.ofAddress(block.ptr).reinterpret(bytes), device);
    CLEANER.register(
        storage,
        () -> {
          if (block.returned.compareAndSet(false, true)) {
            returned.add(block);
          }
        });
    return storage;
  }

  /**
   * Gives {@code storage}'s block back now: the caller promises that nothing issued later reads it.
   * Storage this allocator did not hand out (or already took back) is ignored.
   */
  public synchronized void release(Storage storage) {
    Block b = live.get(storage.segment().address());
    if (b != null) {
      giveBack(b);
    }
  }

  /** Opens a scope, nested in the open one if any, that collects the blocks allocated in it. */
  Scope openScope() {
    Scope opened = new Scope(scope.get());
    scope.set(opened);
    return opened;
  }

  /** A new, empty holding for state kept across steps. */
  public Holding openHolding() {
    return new Holding();
  }

  /** A new, empty pool for one graph's memory. */
  public GraphPool openGraphPool() {
    return new GraphPool();
  }

  /**
   * Makes every allocation of the calling thread come from {@code pool} until called with null (the
   * shared cache).
   */
  public synchronized void allocateFrom(GraphPool pool) {
    if (pool != null && pool.closed) {
      throw new IllegalStateException("allocating from a closed graph pool");
    }
    capturing = pool;
    capturingThread = pool == null ? null : Thread.currentThread();
  }

  private synchronized void giveBack(Block b) {
    if (b.returned.compareAndSet(false, true)) {
      recycle(b);
    }
  }

  // Under the lock, as every method below that touches the cache.
  private void recycle(Block b) {
    // A block of a closed graph pool already left the live set; its memory went to the driver.
    if (!live.remove(b.ptr, b)) {
      return;
    }
    liveBytes -= b.size;
    Map<Long, ArrayDeque<Long>> into = b.pool == null ? cached : b.pool.free;
    into.computeIfAbsent(b.size, k -> new ArrayDeque<>()).push(b.ptr);
  }

  public static long sizeClass(long bytes) {
    long unit = bytes < SMALL ? SMALL_ROUNDING : LARGE_ROUNDING;
    return (bytes + unit - 1) / unit * unit;
  }

  private long take(long size) {
    drainReturned();
    ArrayDeque<Long> free = cached.get(size);
    if (free != null && !free.isEmpty()) {
      return free.pop();
    }
    try {
      return fresh(size);
    } catch (CudaException e) {
      if (e.status() != Driver.CUDA_ERROR_OUT_OF_MEMORY) {
        throw e;
      }
      // Device memory is invisible to the Java heap's sizing: collect so unreachable tensors
      // come back, give every cached block to the driver, and try once more.
      collect();
      ArrayDeque<Long> again = cached.get(size);
      if (again != null && !again.isEmpty()) {
        return again.pop();
      }
      releaseCached();
      return fresh(size);
    }
  }

  private long fresh(long size) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = arena.allocate(ValueLayout.JAVA_LONG);
      Driver.call("cuMemAlloc_v2", () -> (int) Driver.cuMemAlloc_v2.invokeExact(out, size));
      reservedBytes += size;
      peakReservedBytes = Math.max(peakReservedBytes, reservedBytes);
      return out.get(ValueLayout.JAVA_LONG, 0);
    }
  }

  private synchronized void drainReturned() {
    Block block;
    while ((block = returned.poll()) != null) {
      recycle(block);
    }
  }

  /** Gives the cached blocks back to the driver when they exceed {@code keepBytes}. */
  public synchronized void trim(long keepBytes) {
    if (reservedBytes() - liveBytes() > keepBytes) {
      releaseCached();
    }
  }

  /** Gives every cached (unused) block back to the driver. */
  public synchronized void releaseCached() {
    drainReturned();
    context.synchronize();
    for (Map.Entry<Long, ArrayDeque<Long>> e : cached.entrySet()) {
      for (long ptr : e.getValue()) {
        Driver.call("cuMemFree_v2", () -> (int) Driver.cuMemFree_v2.invokeExact(ptr));
        reservedBytes -= e.getKey();
      }
    }
    cached.clear();
  }

  /** Lets the collector find unreachable tensors and takes their blocks back. */
  private void collect() {
    System.gc();
    sleepBriefly();
    drainReturned();
  }

  private static void sleepBriefly() {
    try {
      Thread.sleep(50);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Bytes held from the driver (live tensors plus the cache). */
  public synchronized long reservedBytes() {
    return reservedBytes;
  }

  /** Bytes of tensors not yet known to be unreachable. */
  public synchronized long liveBytes() {
    drainReturned();
    return liveBytes;
  }

  /**
   * Restarts the high-water marks (and the census, when on) from the current figures, after the
   * collector has found what is unreachable: garbage of earlier work (tensors made outside any
   * scope, which only the cleaner gives back) would otherwise count toward the next peak.
   */
  public synchronized void resetPeaks() {
    collect();
    peakLiveBytes = liveBytes;
    peakReservedBytes = reservedBytes;
    if (census) {
      takeCensus();
    }
  }

  /**
   * Starts or stops recording where each block is allocated (a stack walk per allocation, so for
   * benchmarks and diagnosis only) and, near each new high of the live bytes, which sites hold
   * them: {@link #censusAtPeak}. Blocks allocated while it was off count under "unrecorded".
   */
  public synchronized void census(boolean on) {
    census = on;
    censusBytes = 0;
    censusAtPeak = Map.of();
    if (on) {
      takeCensus();
    }
  }

  /**
   * The live blocks at the census nearest the latest high (within 64 MB of it), grouped by
   * allocation site, largest first: one line each with the site, the block count and their bytes.
   */
  public synchronized String censusAtPeak() {
    StringBuilder out = new StringBuilder();
    censusAtPeak.entrySet().stream()
        .sorted((a, b) -> Long.compare(b.getValue()[1], a.getValue()[1]))
        .forEach(
            e ->
                out.append(
                    String.format(
                        "%8.3f GB in %4d blocks  %s%n",
                        e.getValue()[1] / 1e9, e.getValue()[0], e.getKey())));
    return out.toString();
  }

  private void takeCensus() {
    censusBytes = liveBytes;
    Map<String, long[]> sites = new HashMap<>();
    for (Block b : live.values()) {
      long[] countAndBytes =
          sites.computeIfAbsent(b.site == null ? "unrecorded" : b.site, k -> new long[2]);
      countAndBytes[0]++;
      countAndBytes[1] += b.size;
    }
    censusAtPeak = sites;
  }

  // The innermost caller outside this package and the innermost model-side frame (outside the
  // backend's packages), which together say what a block is for.
  private static final StackWalker WALKER = StackWalker.getInstance();

  private static String site() {
    return WALKER.walk(
        frames -> {
          String[] found = new String[2];
          frames
              .filter(f -> !f.getClassName().startsWith("dev.stepweave.cuda.memory."))
              .forEach(
                  f -> {
                    String c = f.getClassName();
                    String where =
                        c.substring(c.lastIndexOf('.') + 1)
                            + "."
                            + f.getMethodName()
                            + ":"
                            + f.getLineNumber();
                    if (found[0] == null) {
                      found[0] = where;
                    }
                    if (found[1] == null
                        && !c.startsWith("dev.stepweave.cuda.")
                        && !c.startsWith("dev.stepweave.tensor.")) {
                      found[1] = where;
                    }
                  });
          return found[0] + (found[1] == null ? "" : " <- " + found[1]);
        });
  }

  /** The most bytes ever held from the driver at once. */
  public synchronized long peakReservedBytes() {
    return peakReservedBytes;
  }

  /** The most bytes ever live at once. */
  public synchronized long peakLiveBytes() {
    return peakLiveBytes;
  }
}

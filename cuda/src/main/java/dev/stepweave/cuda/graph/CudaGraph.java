package dev.stepweave.cuda.graph;

import dev.stepweave.cuda.driver.CudaContext;
import dev.stepweave.cuda.driver.Driver;
import dev.stepweave.cuda.driver.Ffm;
import dev.stepweave.cuda.memory.DeviceAllocator;
import dev.stepweave.cuda.memory.DeviceTensors;
import dev.stepweave.tensor.GraphKey;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.function.Function;

/**
 * One recorded body of {@link dev.stepweave.cuda.CudaBackend#replayable}: its static input buffers,
 * the memory pool everything it allocated came from, the executable graph, and the static output it
 * writes. A replay copies new inputs into the static buffers, launches the graph and copies the
 * output out, all on the backend's stream.
 *
 * <p>Capture runs in relaxed mode. The other modes forbid "unsafe" calls such as {@code cuMemAlloc}
 * on the capturing thread, and the graph's pool must be able to grow while the body is recorded;
 * global mode would also fail unrelated threads' synchronous calls during the capture. What relaxed
 * mode no longer catches, a host operation inside the body (an upload, a download, a wait), the
 * backend refuses itself with an {@link IllegalStateException} naming the operation ({@link
 * CudaContext#refuseDuringCapture}), and the recording is abandoned.
 */
final class CudaGraph implements AutoCloseable {
  private final DeviceTensors tensors;
  private final long stream;
  private final List<Tensor> inputs;
  private final Tensor output;
  private final DeviceAllocator.GraphPool pool;
  private final long exec;

  private CudaGraph(
      DeviceTensors tensors,
      List<Tensor> inputs,
      Tensor output,
      DeviceAllocator.GraphPool pool,
      long exec) {
    this.tensors = tensors;
    this.stream = tensors.context().stream();
    this.inputs = inputs;
    this.output = output;
    this.pool = pool;
    this.exec = exec;
  }

  /**
   * Records {@code body} on static buffers shaped like {@code inputs}; nothing runs. Everything
   * allocated meanwhile, the static buffers included, comes from a new pool the graph keeps.
   */
  static CudaGraph record(
      DeviceTensors tensors,
      DeviceAllocator allocator,
      GraphKey key,
      List<Tensor> inputs,
      Function<List<Tensor>, Tensor> body) {
    // No other thread's work may reach the stream (or take from the graph's pool) meanwhile.
    return tensors.context().exclusively(() -> recordHere(tensors, allocator, key, inputs, body));
  }

  private static CudaGraph recordHere(
      DeviceTensors tensors,
      DeviceAllocator allocator,
      GraphKey key,
      List<Tensor> inputs,
      Function<List<Tensor>, Tensor> body) {
    CudaContext context = tensors.context();
    long stream = context.stream();
    DeviceAllocator.GraphPool pool = allocator.openGraphPool();
    try {
      List<Tensor> statics;
      Tensor output;
      long graph;
      allocator.allocateFrom(pool);
      try {
        statics = inputs.stream().map(t -> tensors.empty(t.dtype(), t.shape())).toList();
        Driver.call(
            "cuStreamBeginCapture_v2",
            () ->
                (int)
                    Driver.cuStreamBeginCapture_v2.invokeExact(
                        stream, Driver.CU_STREAM_CAPTURE_MODE_RELAXED));
        context.capturing(key);
        try {
          output = body.apply(statics);
        } catch (RuntimeException | Error e) {
          context.capturing(null);
          abandon(stream);
          throw e;
        }
        context.capturing(null);
        int status = captureStatus(stream);
        if (status != Driver.CU_STREAM_CAPTURE_STATUS_ACTIVE) {
          abandon(stream);
          throw new IllegalStateException(
              "the CUDA graph recording for "
                  + key
                  + " was invalidated (capture status "
                  + status
                  + "): the body did something a graph cannot record");
        }
        graph = endCapture(stream);
      } finally {
        allocator.allocateFrom(null);
      }
      long exec = instantiate(graph);
      return new CudaGraph(tensors, statics, output, pool, exec);
    } catch (RuntimeException | Error e) {
      pool.close();
      throw e;
    }
  }

  /** {@code CUstreamCaptureStatus} of {@code stream}. */
  static int captureStatus(long stream) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
      Driver.call(
          "cuStreamIsCapturing", () -> (int) Driver.cuStreamIsCapturing.invokeExact(stream, out));
      return out.get(ValueLayout.JAVA_INT, 0);
    }
  }

  private static long endCapture(long stream) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = arena.allocate(ValueLayout.JAVA_LONG);
      Driver.call(
          "cuStreamEndCapture", () -> (int) Driver.cuStreamEndCapture.invokeExact(stream, out));
      return out.get(ValueLayout.JAVA_LONG, 0);
    }
  }

  /**
   * Ends a capture that failed, leaving the stream able to run work; the status is not checked (an
   * invalidated capture ends with an error and no graph).
   */
  private static void abandon(long stream) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = arena.allocate(ValueLayout.JAVA_LONG);
      int unused = (int) Driver.cuStreamEndCapture.invokeExact(stream, out);
      long graph = out.get(ValueLayout.JAVA_LONG, 0);
      if (graph != 0) {
        Driver.call("cuGraphDestroy", () -> (int) Driver.cuGraphDestroy.invokeExact(graph));
      }
    } catch (Throwable t) {
      throw Ffm.rethrow("cuStreamEndCapture", t);
    }
  }

  /** The executable of {@code graph}; the graph itself is destroyed (the executable is its own). */
  private static long instantiate(long graph) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = arena.allocate(ValueLayout.JAVA_LONG);
      try {
        Driver.call(
            "cuGraphInstantiateWithFlags",
            () -> (int) Driver.cuGraphInstantiateWithFlags.invokeExact(out, graph, 0L));
      } finally {
        Driver.call("cuGraphDestroy", () -> (int) Driver.cuGraphDestroy.invokeExact(graph));
      }
      return out.get(ValueLayout.JAVA_LONG, 0);
    }
  }

  /**
   * Runs the recording on {@code args} (shaped as recorded); returns a fresh copy of the output.
   */
  Tensor replay(List<Tensor> args) {
    for (int i = 0; i < args.size(); i++) {
      load(args.get(i), inputs.get(i));
    }
    Driver.call("cuGraphLaunch", () -> (int) Driver.cuGraphLaunch.invokeExact(exec, stream));
    // The static output is overwritten by the next replay: the caller gets its own copy.
    return tensors.convert(output, output.dtype());
  }

  private void load(Tensor arg, Tensor target) {
    Tensor src = tensors.onDevice(arg);
    long bytes = target.byteSize();
    if (bytes == 0) {
      return;
    }
    if (src.isContiguous() && src.dtype() == target.dtype()) {
      long from = DeviceTensors.address(src);
      long to = DeviceTensors.address(target);
      Driver.call(
          "cuMemcpyDtoDAsync_v2",
          () -> (int) Driver.cuMemcpyDtoDAsync_v2.invokeExact(to, from, bytes, stream));
    } else {
      tensors.copy(src, target);
    }
  }

  /** Bytes of device memory this graph holds (its pool: static buffers and the body's tensors). */
  long poolBytes() {
    return pool.bytes();
  }

  /** Destroys the executable and frees the pool (after the stream finished any replay). */
  @Override
  public void close() {
    Driver.call("cuGraphExecDestroy", () -> (int) Driver.cuGraphExecDestroy.invokeExact(exec));
    pool.close();
  }
}

package dev.stepweave.cuda.driver;

import static dev.stepweave.cuda.driver.Driver.call;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * One device's primary context and the stream all our work is issued on. Work on one stream runs in
 * issue order, which is what lets the allocator recycle a freed block immediately. The stream is a
 * blocking one so the synchronous copies (on the legacy default stream) order after it.
 */
public final class CudaContext implements AutoCloseable {
  private final int device;
  private final long context;
  private final long stream;
  private final String name;
  private final int major;
  private final int minor;
  private final int multiprocessors;
  // A context is current per thread; work may be issued from any thread (loops run on workers).
  private final ThreadLocal<Boolean> boundHere = ThreadLocal.withInitial(() -> false);
  // What the stream is recording a graph for, or null: while set, issued work is recorded, not run.
  private volatile Object capturing;
  // Held through a graph's recording and through each call that other threads make (a download of
  // a result): the recording is relaxed, so a kernel another thread issued meanwhile would join it.
  private final ReentrantLock exclusive = new ReentrantLock();

  private CudaContext(
      int device, long context, long stream, String name, int major, int minor, int sms) {
    this.device = device;
    this.context = context;
    this.stream = stream;
    this.name = name;
    this.major = major;
    this.minor = minor;
    this.multiprocessors = sms;
  }

  /** Initialises the driver and opens device {@code ordinal}'s primary context. */
  public static CudaContext open(int ordinal) {
    try (Arena arena = Arena.ofConfined()) {
      call("cuInit", () -> (int) Driver.cuInit.invokeExact(0));
      MemorySegment count = arena.allocate(ValueLayout.JAVA_INT);
      call("cuDeviceGetCount", () -> (int) Driver.cuDeviceGetCount.invokeExact(count));
      int devices = count.get(ValueLayout.JAVA_INT, 0);
      if (ordinal >= devices) {
        throw new IllegalArgumentException(
            "CUDA device " + ordinal + " requested but " + devices + " present");
      }
      MemorySegment dev = arena.allocate(ValueLayout.JAVA_INT);
      call("cuDeviceGet", () -> (int) Driver.cuDeviceGet.invokeExact(dev, ordinal));
      int device = dev.get(ValueLayout.JAVA_INT, 0);
      MemorySegment nameBuf = arena.allocate(256);
      call("cuDeviceGetName", () -> (int) Driver.cuDeviceGetName.invokeExact(nameBuf, 256, device));
      int major = attribute(arena, device, Driver.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
      int minor = attribute(arena, device, Driver.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
      int sms = attribute(arena, device, Driver.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
      MemorySegment ctx = arena.allocate(ValueLayout.JAVA_LONG);
      call(
          "cuDevicePrimaryCtxRetain",
          () -> (int) Driver.cuDevicePrimaryCtxRetain.invokeExact(ctx, device));
      long context = ctx.get(ValueLayout.JAVA_LONG, 0);
      call("cuCtxSetCurrent", () -> (int) Driver.cuCtxSetCurrent.invokeExact(context));
      MemorySegment st = arena.allocate(ValueLayout.JAVA_LONG);
      call("cuStreamCreate", () -> (int) Driver.cuStreamCreate.invokeExact(st, 0));
      return new CudaContext(
          device,
          context,
          st.get(ValueLayout.JAVA_LONG, 0),
          nameBuf.getString(0),
          major,
          minor,
          sms);
    }
  }

  private static int attribute(Arena arena, int device, int attribute) {
    MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
    call(
        "cuDeviceGetAttribute",
        () -> (int) Driver.cuDeviceGetAttribute.invokeExact(out, attribute, device));
    return out.get(ValueLayout.JAVA_INT, 0);
  }

  /** Makes this context current on the calling thread (each thread that issues work needs it). */
  public void makeCurrent() {
    call("cuCtxSetCurrent", () -> (int) Driver.cuCtxSetCurrent.invokeExact(context));
  }

  /** Makes this context current on the calling thread once; cheap after the first call. */
  public void bind() {
    if (!boundHere.get()) {
      makeCurrent();
      boundHere.set(true);
    }
  }

  public long stream() {
    return stream;
  }

  public int device() {
    return device;
  }

  /** The device's marketing name, e.g. "NVIDIA H200". */
  public String name() {
    return name;
  }

  /** The NVRTC architecture for this device, e.g. {@code sm_90}. */
  public String arch() {
    return "sm_" + major + minor;
  }

  public int multiprocessors() {
    return multiprocessors;
  }

  /**
   * Runs {@code work} with the stream to itself as far as graph recordings go: it waits for one in
   * progress on another thread and none starts until it returns. Reentrant, so a recording body may
   * call what takes it.
   */
  public <T> T exclusively(Supplier<T> work) {
    exclusive.lock();
    try {
      return work.get();
    } finally {
      exclusive.unlock();
    }
  }

  /** Marks the stream as recording a graph for {@code key}, or (null) as running work again. */
  public void capturing(Object key) {
    capturing = key;
  }

  /** Whether the stream is recording a graph (issued work is recorded, not run). */
  public boolean isCapturing() {
    return capturing != null;
  }

  /**
   * Throws while the stream records a graph: {@code operation} involves the host (a copy to or from
   * it, a wait), which a graph cannot record and which would invalidate the capture.
   */
  public void refuseDuringCapture(String operation) {
    if (capturing != null) {
      throw new IllegalStateException(
          operation
              + " while recording a CUDA graph for "
              + capturing
              + ": a graph records device work only; do it before the recorded body, or make"
              + " the tensor once at load or warm-up and keep it on the device");
    }
  }

  /** Waits until all work issued on the stream has finished. */
  public void synchronize() {
    refuseDuringCapture("a wait for the stream");
    call("cuStreamSynchronize", () -> (int) Driver.cuStreamSynchronize.invokeExact(stream));
  }

  /** Free and total device memory in bytes, as the driver reports them. */
  public long[] memoryInfo() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment free = arena.allocate(ValueLayout.JAVA_LONG);
      MemorySegment total = arena.allocate(ValueLayout.JAVA_LONG);
      call("cuMemGetInfo_v2", () -> (int) Driver.cuMemGetInfo_v2.invokeExact(free, total));
      return new long[] {free.get(ValueLayout.JAVA_LONG, 0), total.get(ValueLayout.JAVA_LONG, 0)};
    }
  }

  /** Milliseconds of device time {@code work} takes on the stream, measured with events. */
  public float time(Runnable work) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment a = arena.allocate(ValueLayout.JAVA_LONG);
      MemorySegment b = arena.allocate(ValueLayout.JAVA_LONG);
      call("cuEventCreate", () -> (int) Driver.cuEventCreate.invokeExact(a, 0));
      call("cuEventCreate", () -> (int) Driver.cuEventCreate.invokeExact(b, 0));
      long start = a.get(ValueLayout.JAVA_LONG, 0);
      long end = b.get(ValueLayout.JAVA_LONG, 0);
      try {
        call("cuEventRecord", () -> (int) Driver.cuEventRecord.invokeExact(start, stream));
        work.run();
        call("cuEventRecord", () -> (int) Driver.cuEventRecord.invokeExact(end, stream));
        call("cuEventSynchronize", () -> (int) Driver.cuEventSynchronize.invokeExact(end));
        MemorySegment ms = arena.allocate(ValueLayout.JAVA_FLOAT);
        call(
            "cuEventElapsedTime",
            () -> (int) Driver.cuEventElapsedTime.invokeExact(ms, start, end));
        return ms.get(ValueLayout.JAVA_FLOAT, 0);
      } finally {
        call("cuEventDestroy_v2", () -> (int) Driver.cuEventDestroy_v2.invokeExact(start));
        call("cuEventDestroy_v2", () -> (int) Driver.cuEventDestroy_v2.invokeExact(end));
      }
    }
  }

  /**
   * An event recorded on the stream now, behind the work queued so far ({@link #awaitEvent} waits
   * for it and destroys it). Created without timing, the cheaper kind.
   */
  public long recordEvent() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = arena.allocate(ValueLayout.JAVA_LONG);
      call(
          "cuEventCreate",
          () -> (int) Driver.cuEventCreate.invokeExact(out, CU_EVENT_DISABLE_TIMING));
      long event = out.get(ValueLayout.JAVA_LONG, 0);
      call("cuEventRecord", () -> (int) Driver.cuEventRecord.invokeExact(event, stream));
      return event;
    }
  }

  /** Waits for {@code event} (from {@link #recordEvent}, on any thread), then destroys it. */
  public void awaitEvent(long event) {
    bind();
    try {
      call("cuEventSynchronize", () -> (int) Driver.cuEventSynchronize.invokeExact(event));
    } finally {
      call("cuEventDestroy_v2", () -> (int) Driver.cuEventDestroy_v2.invokeExact(event));
    }
  }

  private static final int CU_EVENT_DISABLE_TIMING = 2;

  /**
   * After a sticky error: destroys the primary context with everything allocated in it, without
   * waiting for the stream (waiting would only fail again), so that the next {@link #open} of this
   * device creates a fresh one.
   */
  public void resetAfterFault() {
    call(
        "cuDevicePrimaryCtxReset_v2",
        () -> (int) Driver.cuDevicePrimaryCtxReset_v2.invokeExact(device));
  }

  @Override
  public void close() {
    synchronize();
    call("cuStreamDestroy_v2", () -> (int) Driver.cuStreamDestroy_v2.invokeExact(stream));
    call(
        "cuDevicePrimaryCtxRelease_v2",
        () -> (int) Driver.cuDevicePrimaryCtxRelease_v2.invokeExact(device));
  }
}

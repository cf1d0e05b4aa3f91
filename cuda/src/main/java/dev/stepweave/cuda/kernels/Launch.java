package dev.stepweave.cuda.kernels;

import dev.stepweave.cuda.driver.Driver;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * One kernel launch being assembled: {@code cuLaunchKernel} takes an array of pointers, one per
 * parameter, each pointing at that parameter's value; the values live in a confined arena until the
 * launch call returns (the driver copies them).
 */
public final class Launch implements AutoCloseable {
  private final Arena arena = Arena.ofConfined();
  private final List<MemorySegment> args = new ArrayList<>();
  private final long function;

  Launch(long function) {
    this.function = function;
  }

  public Launch ptr(long devicePointer) {
    return i64(devicePointer);
  }

  public Launch i64(long v) {
    MemorySegment s = arena.allocate(ValueLayout.JAVA_LONG);
    s.set(ValueLayout.JAVA_LONG, 0, v);
    args.add(s);
    return this;
  }

  public Launch i32(int v) {
    MemorySegment s = arena.allocate(ValueLayout.JAVA_INT);
    s.set(ValueLayout.JAVA_INT, 0, v);
    args.add(s);
    return this;
  }

  public Launch f32(float v) {
    MemorySegment s = arena.allocate(ValueLayout.JAVA_FLOAT);
    s.set(ValueLayout.JAVA_FLOAT, 0, v);
    args.add(s);
    return this;
  }

  /** A struct passed by value: the bytes of {@code struct}, copied. */
  public Launch struct(MemorySegment struct) {
    MemorySegment s = arena.allocate(struct.byteSize(), 8);
    s.copyFrom(struct);
    args.add(s);
    return this;
  }

  public Arena arena() {
    return arena;
  }

  public void run(long stream, int gridX, int gridY, int gridZ, int block, int sharedBytes) {
    MemorySegment params = arena.allocate(ValueLayout.ADDRESS, args.size());
    for (int i = 0; i < args.size(); i++) {
      params.setAtIndex(ValueLayout.ADDRESS, i, args.get(i));
    }
    Driver.call(
        "cuLaunchKernel",
        () ->
            (int)
                Driver.cuLaunchKernel.invokeExact(
                    function,
                    gridX,
                    gridY,
                    gridZ,
                    block,
                    1,
                    1,
                    sharedBytes,
                    stream,
                    params,
                    MemorySegment.NULL));
  }

  @Override
  public void close() {
    arena.close();
  }
}

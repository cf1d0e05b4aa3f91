package dev.stepweave.cuda.kernels;

import dev.stepweave.cuda.driver.Driver;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** A loaded CUBIN and its kernels, looked up by name once and kept. */
final class KernelModule {
  private final long module;
  private final Map<String, Long> functions = new ConcurrentHashMap<>();

  private KernelModule(long module) {
    this.module = module;
  }

  static KernelModule load(byte[] cubin) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment image = arena.allocate(cubin.length + 1L, 16);
      MemorySegment.copy(cubin, 0, image, ValueLayout.JAVA_BYTE, 0, cubin.length);
      MemorySegment out = arena.allocate(ValueLayout.JAVA_LONG);
      Driver.call("cuModuleLoadData", () -> (int) Driver.cuModuleLoadData.invokeExact(out, image));
      return new KernelModule(out.get(ValueLayout.JAVA_LONG, 0));
    }
  }

  /** The kernel {@code name} (an {@code extern "C"} function of the module). */
  long function(String name) {
    Long f = functions.get(name);
    if (f != null) {
      return f;
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = arena.allocate(ValueLayout.JAVA_LONG);
      MemorySegment cname = arena.allocateFrom(name);
      Driver.call(
          "cuModuleGetFunction(" + name + ")",
          () -> (int) Driver.cuModuleGetFunction.invokeExact(out, module, cname));
      long fn = out.get(ValueLayout.JAVA_LONG, 0);
      functions.put(name, fn);
      return fn;
    }
  }
}

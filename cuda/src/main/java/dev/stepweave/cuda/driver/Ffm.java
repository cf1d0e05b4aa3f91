package dev.stepweave.cuda.driver;

import java.lang.foreign.AddressLayout;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/** Shared helpers of the binding classes: layouts and downcall creation. */
public final class Ffm {
  public static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;
  public static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG;
  public static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT;
  public static final AddressLayout PTR = ValueLayout.ADDRESS;

  private Ffm() {}

  /** A downcall to {@code name} returning a C {@code int} status. */
  public static MethodHandle status(SymbolLookup lib, String name, MemoryLayout... args) {
    return downcall(lib, name, FunctionDescriptor.of(INT, args));
  }

  public static MethodHandle downcall(
      SymbolLookup lib, String name, FunctionDescriptor descriptor) {
    return Linker.nativeLinker()
        .downcallHandle(
            lib.find(name)
                .orElseThrow(
                    () -> new UnsatisfiedLinkError("symbol " + name + " not found in library")),
            descriptor);
  }

  /** Turns a throwable from {@code invokeExact} into an unchecked exception naming the call. */
  public static RuntimeException rethrow(String call, Throwable t) {
    if (t instanceof RuntimeException r) {
      return r;
    }
    if (t instanceof Error e) {
      throw e;
    }
    return new CudaException("calling " + call + ": " + t, t);
  }
}

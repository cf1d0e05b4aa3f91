package dev.stepweave.cuda.kernels;

import static dev.stepweave.cuda.driver.Ffm.INT;
import static dev.stepweave.cuda.driver.Ffm.LONG;
import static dev.stepweave.cuda.driver.Ffm.PTR;

import dev.stepweave.cuda.driver.CudaException;
import dev.stepweave.cuda.driver.CudaLibraries;
import dev.stepweave.cuda.driver.Driver;
import dev.stepweave.cuda.driver.Ffm;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

/** NVRTC, the runtime CUDA C++ compiler: one handle per C function, named after it. */
final class Nvrtc {
  private static final SymbolLookup LIB = CudaLibraries.nvrtcLookup();

  static final MethodHandle nvrtcVersion = Ffm.status(LIB, "nvrtcVersion", PTR, PTR);
  static final MethodHandle nvrtcCreateProgram =
      Ffm.status(LIB, "nvrtcCreateProgram", PTR, PTR, PTR, INT, PTR, PTR);
  static final MethodHandle nvrtcCompileProgram =
      Ffm.status(LIB, "nvrtcCompileProgram", LONG, INT, PTR);
  static final MethodHandle nvrtcGetProgramLogSize =
      Ffm.status(LIB, "nvrtcGetProgramLogSize", LONG, PTR);
  static final MethodHandle nvrtcGetProgramLog = Ffm.status(LIB, "nvrtcGetProgramLog", LONG, PTR);
  static final MethodHandle nvrtcGetCUBINSize = Ffm.status(LIB, "nvrtcGetCUBINSize", LONG, PTR);
  static final MethodHandle nvrtcGetCUBIN = Ffm.status(LIB, "nvrtcGetCUBIN", LONG, PTR);
  static final MethodHandle nvrtcDestroyProgram = Ffm.status(LIB, "nvrtcDestroyProgram", PTR);
  static final MethodHandle nvrtcGetErrorString =
      Ffm.downcall(LIB, "nvrtcGetErrorString", FunctionDescriptor.of(PTR, INT));

  private Nvrtc() {}

  static void call(String name, Driver.CheckedCall call) {
    int status;
    try {
      status = call.invoke();
    } catch (Throwable t) {
      throw Ffm.rethrow(name, t);
    }
    if (status != 0) {
      throw new CudaException(name, status, errorString(status));
    }
  }

  static String errorString(int status) {
    try {
      MemorySegment s = (MemorySegment) nvrtcGetErrorString.invokeExact(status);
      return s.reinterpret(256).getString(0);
    } catch (Throwable t) {
      return "unknown error";
    }
  }
}

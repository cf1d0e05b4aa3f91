package dev.stepweave.cuda.driver;

import static dev.stepweave.cuda.driver.Ffm.INT;
import static dev.stepweave.cuda.driver.Ffm.LONG;
import static dev.stepweave.cuda.driver.Ffm.PTR;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

/**
 * The CUDA driver API ({@code libcuda.so.1}): one handle per C function, named after it. Each
 * wrapper method calls the function and throws a {@link CudaException} naming it on a non-zero
 * status. See the package documentation for the ABI choices.
 */
public final class Driver {
  private static final SymbolLookup LIB = CudaLibraries.driverLookup();

  public static final int CUDA_ERROR_OUT_OF_MEMORY = 2;
  static final int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
  static final int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
  static final int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

  static final MethodHandle cuInit = Ffm.status(LIB, "cuInit", INT);
  static final MethodHandle cuDriverGetVersion = Ffm.status(LIB, "cuDriverGetVersion", PTR);
  static final MethodHandle cuDeviceGetCount = Ffm.status(LIB, "cuDeviceGetCount", PTR);
  static final MethodHandle cuDeviceGet = Ffm.status(LIB, "cuDeviceGet", PTR, INT);
  static final MethodHandle cuDeviceGetName = Ffm.status(LIB, "cuDeviceGetName", PTR, INT, INT);
  static final MethodHandle cuDeviceGetAttribute =
      Ffm.status(LIB, "cuDeviceGetAttribute", PTR, INT, INT);
  static final MethodHandle cuDevicePrimaryCtxRetain =
      Ffm.status(LIB, "cuDevicePrimaryCtxRetain", PTR, INT);
  static final MethodHandle cuDevicePrimaryCtxRelease_v2 =
      Ffm.status(LIB, "cuDevicePrimaryCtxRelease_v2", INT);
  static final MethodHandle cuDevicePrimaryCtxReset_v2 =
      Ffm.status(LIB, "cuDevicePrimaryCtxReset_v2", INT);
  static final MethodHandle cuCtxSetCurrent = Ffm.status(LIB, "cuCtxSetCurrent", LONG);
  static final MethodHandle cuCtxSynchronize = Ffm.status(LIB, "cuCtxSynchronize");
  static final MethodHandle cuGetErrorName = Ffm.status(LIB, "cuGetErrorName", INT, PTR);

  static final MethodHandle cuStreamCreate = Ffm.status(LIB, "cuStreamCreate", PTR, INT);
  static final MethodHandle cuStreamSynchronize = Ffm.status(LIB, "cuStreamSynchronize", LONG);
  static final MethodHandle cuStreamDestroy_v2 = Ffm.status(LIB, "cuStreamDestroy_v2", LONG);
  static final MethodHandle cuEventCreate = Ffm.status(LIB, "cuEventCreate", PTR, INT);
  static final MethodHandle cuEventRecord = Ffm.status(LIB, "cuEventRecord", LONG, LONG);
  static final MethodHandle cuEventSynchronize = Ffm.status(LIB, "cuEventSynchronize", LONG);
  static final MethodHandle cuEventElapsedTime =
      Ffm.status(LIB, "cuEventElapsedTime", PTR, LONG, LONG);
  static final MethodHandle cuEventDestroy_v2 = Ffm.status(LIB, "cuEventDestroy_v2", LONG);

  static final MethodHandle cuMemGetInfo_v2 = Ffm.status(LIB, "cuMemGetInfo_v2", PTR, PTR);
  public static final MethodHandle cuMemAlloc_v2 = Ffm.status(LIB, "cuMemAlloc_v2", PTR, LONG);
  public static final MethodHandle cuMemFree_v2 = Ffm.status(LIB, "cuMemFree_v2", LONG);

  /**
   * Page-locked host memory the device copies to and from at full PCIe speed (a pageable buffer is
   * staged through the driver's small pinned buffers, several times slower for parked weights).
   */
  public static final MethodHandle cuMemHostAlloc =
      Ffm.status(LIB, "cuMemHostAlloc", PTR, LONG, INT);

  public static final MethodHandle cuMemFreeHost = Ffm.status(LIB, "cuMemFreeHost", PTR);
  public static final MethodHandle cuMemcpyHtoD_v2 =
      Ffm.status(LIB, "cuMemcpyHtoD_v2", LONG, PTR, LONG);
  public static final MethodHandle cuMemcpyDtoH_v2 =
      Ffm.status(LIB, "cuMemcpyDtoH_v2", PTR, LONG, LONG);

  /** Asynchronous only into page-locked memory; into pageable memory the driver waits. */
  public static final MethodHandle cuMemcpyDtoHAsync_v2 =
      Ffm.status(LIB, "cuMemcpyDtoHAsync_v2", PTR, LONG, LONG, LONG);

  public static final MethodHandle cuMemcpyDtoDAsync_v2 =
      Ffm.status(LIB, "cuMemcpyDtoDAsync_v2", LONG, LONG, LONG, LONG);
  public static final MethodHandle cuMemsetD32Async =
      Ffm.status(LIB, "cuMemsetD32Async", LONG, INT, LONG, LONG);

  public static final MethodHandle cuModuleLoadData = Ffm.status(LIB, "cuModuleLoadData", PTR, PTR);
  public static final MethodHandle cuModuleGetFunction =
      Ffm.status(LIB, "cuModuleGetFunction", PTR, LONG, PTR);
  static final MethodHandle cuModuleUnload = Ffm.status(LIB, "cuModuleUnload", LONG);
  public static final int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
  public static final MethodHandle cuFuncSetAttribute =
      Ffm.status(LIB, "cuFuncSetAttribute", LONG, INT, INT);
  public static final MethodHandle cuLaunchKernel =
      Ffm.status(LIB, "cuLaunchKernel", LONG, INT, INT, INT, INT, INT, INT, INT, LONG, PTR, PTR);

  // Virtual memory management: physical allocations mapped into a reserved address range.
  public static final MethodHandle cuMemGetAllocationGranularity =
      Ffm.status(LIB, "cuMemGetAllocationGranularity", PTR, PTR, INT);
  public static final MethodHandle cuMemCreate =
      Ffm.status(LIB, "cuMemCreate", PTR, LONG, PTR, LONG);
  public static final MethodHandle cuMemRelease = Ffm.status(LIB, "cuMemRelease", LONG);
  public static final MethodHandle cuMemAddressReserve =
      Ffm.status(LIB, "cuMemAddressReserve", PTR, LONG, LONG, LONG, LONG);
  public static final MethodHandle cuMemAddressFree =
      Ffm.status(LIB, "cuMemAddressFree", LONG, LONG);
  public static final MethodHandle cuMemMap =
      Ffm.status(LIB, "cuMemMap", LONG, LONG, LONG, LONG, LONG);
  public static final MethodHandle cuMemUnmap = Ffm.status(LIB, "cuMemUnmap", LONG, LONG);
  public static final MethodHandle cuMemSetAccess =
      Ffm.status(LIB, "cuMemSetAccess", LONG, LONG, PTR, LONG);

  // Graphs: a stream's work recorded by capture, instantiated once, launched many times.
  // CUstreamCaptureMode: relaxed lets the capturing thread call cuMemAlloc (see CudaGraph).
  public static final int CU_STREAM_CAPTURE_MODE_RELAXED = 2;
  // CUstreamCaptureStatus
  public static final int CU_STREAM_CAPTURE_STATUS_NONE = 0;
  public static final int CU_STREAM_CAPTURE_STATUS_ACTIVE = 1;
  public static final MethodHandle cuStreamBeginCapture_v2 =
      Ffm.status(LIB, "cuStreamBeginCapture_v2", LONG, INT);
  public static final MethodHandle cuStreamEndCapture =
      Ffm.status(LIB, "cuStreamEndCapture", LONG, PTR);
  public static final MethodHandle cuStreamIsCapturing =
      Ffm.status(LIB, "cuStreamIsCapturing", LONG, PTR);
  public static final MethodHandle cuGraphInstantiateWithFlags =
      Ffm.status(LIB, "cuGraphInstantiateWithFlags", PTR, LONG, LONG);
  public static final MethodHandle cuGraphLaunch = Ffm.status(LIB, "cuGraphLaunch", LONG, LONG);
  public static final MethodHandle cuGraphExecDestroy = Ffm.status(LIB, "cuGraphExecDestroy", LONG);
  public static final MethodHandle cuGraphDestroy = Ffm.status(LIB, "cuGraphDestroy", LONG);

  private Driver() {}

  /** Throws a {@link CudaException} naming {@code call} when {@code status} is an error. */
  static void check(int status, String call) {
    if (status != 0) {
      throw new CudaException(call, status, errorName(status));
    }
  }

  static String errorName(int status) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = arena.allocate(PTR);
      int s = (int) cuGetErrorName.invokeExact(status, out);
      if (s != 0) {
        return "unknown error";
      }
      return out.get(PTR, 0).reinterpret(256).getString(0);
    } catch (Throwable t) {
      return "unknown error";
    }
  }

  /** Calls a status-returning handle whose arguments are all prepared by the caller. */
  public static void call(String name, CheckedCall call) {
    int status;
    try {
      status = call.invoke();
    } catch (Throwable t) {
      throw Ffm.rethrow(name, t);
    }
    check(status, name);
  }

  /** A call of one of the handles above; returns the C status. */
  @FunctionalInterface
  public interface CheckedCall {
    int invoke() throws Throwable;
  }
}

package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import dev.stepweave.cuda.driver.CudaException;
import dev.stepweave.tensor.Fault;
import org.junit.jupiter.api.Test;

/** How CUDA failures are classified for the engine; pure, so it runs without a GPU. */
class CudaFaultsTest {
  private static Fault of(String call, int status) {
    return CudaFaults.classify(new CudaException(call, status, "detail"));
  }

  @Test
  void stickyDriverErrorsArePoolFatal() {
    for (int status : new int[] {700, 719, 716, 999}) {
      assertInstanceOf(Fault.PoolFatal.class, of("cuStreamSynchronize", status), "" + status);
    }
    assertEquals(
        "cuLaunchKernel failed with status 700 (detail)", of("cuLaunchKernel", 700).reason());
  }

  @Test
  void allocationFailuresAreOutOfMemoryInEveryLibrary() {
    assertInstanceOf(Fault.OutOfMemory.class, of("cuMemAlloc_v2", 2));
    assertInstanceOf(Fault.OutOfMemory.class, of("cublasLtMatmul", 3));
    assertInstanceOf(Fault.OutOfMemory.class, of("cudnnBackendExecute", 4004));
  }

  @Test
  void failedLibraryExecutionsArePoolFatalAndBadParametersTheRequests() {
    assertInstanceOf(Fault.PoolFatal.class, of("cublasLtMatmul", 13));
    assertInstanceOf(Fault.PoolFatal.class, of("cudnnBackendExecute", 5001));
    assertInstanceOf(Fault.PoolFatal.class, of("ncclAllReduce", 1));
    assertInstanceOf(Fault.RequestFatal.class, of("cudnnBackendFinalize", 3000));
    assertInstanceOf(Fault.RequestFatal.class, of("cublasLtMatmul", 7));
    assertInstanceOf(Fault.RequestFatal.class, of("nvrtcCompileProgram", 6));
    // Status 2 of cuBLAS is NOT_INITIALIZED, not the driver's out-of-memory.
    assertInstanceOf(Fault.RequestFatal.class, of("cublasLtCreate", 2));
    assertInstanceOf(Fault.RequestFatal.class, of("cuModuleGetFunction", 500));
  }

  @Test
  void aCudaCauseIsFoundUnderWrappersAndOtherFailuresAreTheRequests() {
    RuntimeException wrapped =
        new IllegalStateException("step failed", new CudaException("cuMemcpyDtoH_v2", 700, "x"));
    assertInstanceOf(Fault.PoolFatal.class, CudaFaults.classify(wrapped));
    assertInstanceOf(
        Fault.RequestFatal.class, CudaFaults.classify(new IllegalArgumentException("bad shape")));
  }
}

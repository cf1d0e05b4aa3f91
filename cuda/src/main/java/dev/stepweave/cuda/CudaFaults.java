package dev.stepweave.cuda;

import dev.stepweave.cuda.driver.CudaException;
import dev.stepweave.tensor.Fault;
import java.util.Set;

/**
 * Classifies CUDA failures for the engine by library and status (from CUDA's, cuBLAS's, cuDNN 9's
 * and NCCL's status enums): sticky driver errors, which leave the context unusable for every later
 * call, and failed executions inside cuBLAS, cuDNN or NCCL, are pool-fatal; allocation failures are
 * out-of-memory; the rest (a bad parameter, an unsupported shape, a compile error) belong to the
 * request. The library is told by the failed call's name.
 */
final class CudaFaults {
  /** CUresult values after which the context must be rebuilt. */
  static final Set<Integer> STICKY_DRIVER_ERRORS =
      Set.of(
          4, // CUDA_ERROR_DEINITIALIZED
          46, // CUDA_ERROR_DEVICES_UNAVAILABLE
          201, // CUDA_ERROR_INVALID_CONTEXT
          214, // CUDA_ERROR_ECC_UNCORRECTABLE
          700, // CUDA_ERROR_ILLEGAL_ADDRESS
          702, // CUDA_ERROR_LAUNCH_TIMEOUT
          709, // CUDA_ERROR_CONTEXT_IS_DESTROYED
          714, // CUDA_ERROR_HARDWARE_STACK_ERROR
          715, // CUDA_ERROR_ILLEGAL_INSTRUCTION
          716, // CUDA_ERROR_MISALIGNED_ADDRESS
          717, // CUDA_ERROR_INVALID_ADDRESS_SPACE
          718, // CUDA_ERROR_INVALID_PC
          719, // CUDA_ERROR_LAUNCH_FAILED
          999); // CUDA_ERROR_UNKNOWN

  static final int CUDA_ERROR_OUT_OF_MEMORY = 2;
  static final int CUBLAS_STATUS_ALLOC_FAILED = 3;
  static final int CUBLAS_STATUS_EXECUTION_FAILED = 13;
  static final int CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED = 4004;

  private CudaFaults() {}

  /** What {@code failure} means for the pool; a failure without a CUDA cause is the request's. */
  static Fault classify(RuntimeException failure) {
    for (Throwable t = failure; t != null; t = t.getCause()) {
      if (t instanceof CudaException e && e.call() != null) {
        return classify(e.call(), e.status(), e.getMessage());
      }
    }
    return new Fault.RequestFatal(
        failure.getMessage() == null ? failure.getClass().getSimpleName() : failure.getMessage());
  }

  static Fault classify(String call, int status, String message) {
    if (call.startsWith("cublas")) {
      return status == CUBLAS_STATUS_ALLOC_FAILED
          ? new Fault.OutOfMemory(message)
          : status == CUBLAS_STATUS_EXECUTION_FAILED
              ? new Fault.PoolFatal(message)
              : new Fault.RequestFatal(message);
    }
    if (call.startsWith("cudnn")) {
      // cuDNN 9 (checked against the H200 machine's /usr/include cudnn_graph_v9.h): 4004
      // INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED; 5000 EXECUTION_FAILED and its details 5001… (the
      // CUDA driver, cuBLAS, the runtime, cuRAND failed underneath).
      return status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED
          ? new Fault.OutOfMemory(message)
          : status >= 5000 && status < 6000
              ? new Fault.PoolFatal(message)
              : new Fault.RequestFatal(message);
    }
    if (call.startsWith("nccl")) {
      // A communicator that failed cannot be trusted by any rank again.
      return new Fault.PoolFatal(message);
    }
    if (call.startsWith("nvrtc")) {
      return new Fault.RequestFatal(message);
    }
    if (status == CUDA_ERROR_OUT_OF_MEMORY) {
      return new Fault.OutOfMemory(message);
    }
    return STICKY_DRIVER_ERRORS.contains(status)
        ? new Fault.PoolFatal(message)
        : new Fault.RequestFatal(message);
  }
}

/**
 * The CUDA backend, bound to the CUDA libraries through {@code java.lang.foreign} (no JNI, no
 * native build step). {@link dev.stepweave.cuda.CudaBackend} implements the {@code Backend} SPI by
 * delegating to the packages below; {@link dev.stepweave.cuda.Backends} picks CUDA or the CPU.
 *
 * <ul>
 *   <li>{@code driver}: the driver API, the context and stream, library discovery, FFM helpers.
 *   <li>{@code kernels}: our CUDA C sources, NVRTC, the compiled-kernel cache and launches.
 *   <li>{@code memory}: the caching allocator, scopes, VMM component pools, device tensors.
 *   <li>{@code blas}: cuBLASLt GEMMs. {@code cudnn}: cuDNN's graph API, attention, convolution.
 *   <li>{@code ops}: the compute ops by family (matrix, attention, convolution, norms, elementwise,
 *       movement). {@code graph}: CUDA graph capture and replay. {@code nccl}: NCCL.
 * </ul>
 *
 * <h2>ABI decisions</h2>
 *
 * <ul>
 *   <li>One {@code static final MethodHandle} per C function, named exactly after it ({@link
 *       dev.stepweave.cuda.driver.Driver#cuLaunchKernel}), so a reader can grep the C name; static
 *       final handles let the JIT inline {@code invokeExact} to a direct call.
 *   <li>Opaque handles ({@code CUcontext}, {@code CUstream}, {@code CUmodule}, {@code CUfunction},
 *       {@code nvrtcProgram}, {@code cublasLtHandle_t}, descriptors) and device pointers ({@code
 *       CUdeviceptr}) are {@code JAVA_LONG}: they are 64-bit values on every LP64 target CUDA
 *       supports, Java never dereferences them, and a long cannot be mistaken for readable host
 *       memory. {@code CUdevice} and every enum/status are {@code JAVA_INT}; {@code size_t} is
 *       {@code JAVA_LONG}.
 *   <li>Host memory that C reads or writes (out-parameters, strings, argument arrays, host buffers
 *       of a copy) is {@code ADDRESS}, always allocated by the caller in a confined arena.
 *   <li>The driver API is bound by its versioned symbols ({@code cuMemAlloc_v2}, {@code
 *       cuMemcpyHtoD_v2}, …): the unversioned names are macros in {@code cuda.h} and exported only
 *       for old binaries with 32-bit semantics.
 *   <li>Every call's status is checked; a non-zero status becomes a {@link
 *       dev.stepweave.cuda.driver.CudaException} naming the call and the library's own error name.
 * </ul>
 *
 * <p>The binding classes ({@link dev.stepweave.cuda.driver.Driver}, {@link
 * dev.stepweave.cuda.kernels.Nvrtc}, {@link dev.stepweave.cuda.blas.CublasLt}, {@link
 * dev.stepweave.cuda.cudnn.Cudnn}) resolve their symbols when first initialised, so they are
 * touched only after {@link dev.stepweave.cuda.driver.CudaLibraries#probe()} found the libraries;
 * cuDNN is optional and touched only when it was found (its own ABI notes are on {@code Cudnn}).
 */
package dev.stepweave.cuda;

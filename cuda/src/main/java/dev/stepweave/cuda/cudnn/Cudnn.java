package dev.stepweave.cuda.cudnn;

import static dev.stepweave.cuda.driver.Ffm.INT;
import static dev.stepweave.cuda.driver.Ffm.LONG;
import static dev.stepweave.cuda.driver.Ffm.PTR;

import dev.stepweave.cuda.driver.CudaException;
import dev.stepweave.cuda.driver.CudaLibraries;
import dev.stepweave.cuda.driver.Driver;
import dev.stepweave.cuda.driver.Ffm;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * cuDNN 9 ({@code libcudnn.so.9}): the handle functions and the backend (graph) API, one handle per
 * C function, named after it, and the enum values we use (from {@code cudnn_graph.h} of 9.14).
 *
 * <p>ABI, beyond the package's rules: {@code cudnnHandle_t}, {@code cudnnBackendDescriptor_t} and
 * {@code cudaStream_t} are {@code JAVA_LONG}; every enum ({@code cudnnStatus_t}, attribute names
 * and types, descriptor types) is {@code JAVA_INT}; {@code int64_t} and {@code size_t} are {@code
 * JAVA_LONG}. An attribute's elements are a caller-allocated host array whose element layout
 * follows its {@code cudnnBackendAttributeType_t}: {@code CUDNN_TYPE_INT64} 8 bytes, enum-valued
 * types and {@code CUDNN_TYPE_FLOAT} 4, {@code CUDNN_TYPE_BOOLEAN} a one-byte C {@code bool}, and
 * handles, descriptors and {@code CUDNN_TYPE_VOID_PTR} 8-byte pointers (see {@link
 * CudnnDescriptor}).
 */
final class Cudnn {
  private static final SymbolLookup LIB = CudaLibraries.cudnnLookup();

  // cudnnStatus_t
  static final int CUDNN_STATUS_SUCCESS = 0;

  // cudnnDataType_t
  static final int CUDNN_DATA_FLOAT = 0;
  static final int CUDNN_DATA_BFLOAT16 = 9;

  // cudnnBackendAttributeType_t
  static final int CUDNN_TYPE_HANDLE = 0;
  static final int CUDNN_TYPE_DATA_TYPE = 1;
  static final int CUDNN_TYPE_BOOLEAN = 2;
  static final int CUDNN_TYPE_INT64 = 3;
  static final int CUDNN_TYPE_FLOAT = 4;
  static final int CUDNN_TYPE_VOID_PTR = 6;
  static final int CUDNN_TYPE_CONVOLUTION_MODE = 7;
  static final int CUDNN_TYPE_HEUR_MODE = 8;
  static final int CUDNN_TYPE_NUMERICAL_NOTE = 11;
  static final int CUDNN_TYPE_POINTWISE_MODE = 14;
  static final int CUDNN_TYPE_BACKEND_DESCRIPTOR = 15;
  static final int CUDNN_TYPE_REDUCTION_OPERATOR_TYPE = 18;

  // cudnnBackendDescriptorType_t
  static final int CUDNN_BACKEND_POINTWISE_DESCRIPTOR = 0;
  static final int CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR = 1;
  static final int CUDNN_BACKEND_ENGINE_DESCRIPTOR = 2;
  static final int CUDNN_BACKEND_ENGINECFG_DESCRIPTOR = 3;
  static final int CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR = 4;
  static final int CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR = 5;
  static final int CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR = 10;
  static final int CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR = 13;
  static final int CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR = 15;
  static final int CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR = 16;
  static final int CUDNN_BACKEND_TENSOR_DESCRIPTOR = 17;
  static final int CUDNN_BACKEND_MATMUL_DESCRIPTOR = 18;
  static final int CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR = 19;
  static final int CUDNN_BACKEND_REDUCTION_DESCRIPTOR = 21;
  static final int CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR = 22;
  static final int CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR = 41;

  // cudnnBackendAttributeName_t
  static final int CUDNN_ATTR_CONVOLUTION_COMP_TYPE = 100;
  static final int CUDNN_ATTR_CONVOLUTION_CONV_MODE = 101;
  static final int CUDNN_ATTR_CONVOLUTION_DILATIONS = 102;
  static final int CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES = 103;
  static final int CUDNN_ATTR_CONVOLUTION_POST_PADDINGS = 104;
  static final int CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS = 105;
  static final int CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS = 106;
  static final int CUDNN_ATTR_POINTWISE_MODE = 0;
  static final int CUDNN_ATTR_POINTWISE_MATH_PREC = 1;
  static final int CUDNN_ATTR_ENGINEHEUR_MODE = 200;
  static final int CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH = 201;
  static final int CUDNN_ATTR_ENGINEHEUR_RESULTS = 202;
  static final int CUDNN_ATTR_ENGINECFG_ENGINE = 300;
  static final int CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG = 401;
  static final int CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE = 402;
  static final int CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA = 700;
  static final int CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA = 701;
  static final int CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC = 702;
  static final int CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W = 703;
  static final int CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X = 704;
  static final int CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y = 705;
  static final int CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR = 750;
  static final int CUDNN_ATTR_OPERATION_POINTWISE_XDESC = 751;
  static final int CUDNN_ATTR_OPERATION_POINTWISE_BDESC = 752;
  static final int CUDNN_ATTR_OPERATION_POINTWISE_YDESC = 753;
  // Deprecated in 9.x but still set by cudnn-frontend (and in the working trace).
  static final int CUDNN_ATTR_OPERATIONGRAPH_HANDLE = 800;
  static final int CUDNN_ATTR_OPERATIONGRAPH_OPS = 801;
  static final int CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT = 900;
  static final int CUDNN_ATTR_TENSOR_DATA_TYPE = 901;
  static final int CUDNN_ATTR_TENSOR_DIMENSIONS = 902;
  static final int CUDNN_ATTR_TENSOR_STRIDES = 903;
  static final int CUDNN_ATTR_TENSOR_UNIQUE_ID = 906;
  static final int CUDNN_ATTR_TENSOR_IS_VIRTUAL = 907;
  static final int CUDNN_ATTR_TENSOR_IS_BY_VALUE = 908;
  static final int CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS = 1000;
  static final int CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS = 1001;
  static final int CUDNN_ATTR_VARIANT_PACK_WORKSPACE = 1003;
  static final int CUDNN_ATTR_ENGINE_GLOBAL_INDEX = 1301;
  static final int CUDNN_ATTR_ENGINE_NUMERICAL_NOTE = 1303;
  static final int CUDNN_ATTR_MATMUL_COMP_TYPE = 1500;
  static final int CUDNN_ATTR_OPERATION_MATMUL_ADESC = 1520;
  static final int CUDNN_ATTR_OPERATION_MATMUL_BDESC = 1521;
  static final int CUDNN_ATTR_OPERATION_MATMUL_CDESC = 1522;
  static final int CUDNN_ATTR_OPERATION_MATMUL_DESC = 1523;
  static final int CUDNN_ATTR_REDUCTION_OPERATOR = 1600;
  static final int CUDNN_ATTR_REDUCTION_COMP_TYPE = 1601;
  static final int CUDNN_ATTR_OPERATION_REDUCTION_XDESC = 1610;
  static final int CUDNN_ATTR_OPERATION_REDUCTION_YDESC = 1611;
  static final int CUDNN_ATTR_OPERATION_REDUCTION_DESC = 1612;
  static final int CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC = 2800;
  static final int CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC = 2801;
  static final int CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC = 2802;
  static final int CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC = 2803;
  static final int CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC = 2805;

  // cudnnConvolutionMode_t
  static final int CUDNN_CROSS_CORRELATION = 1;
  // cudnnPointwiseMode_t
  static final int CUDNN_POINTWISE_ADD = 0;
  static final int CUDNN_POINTWISE_MUL = 1;
  static final int CUDNN_POINTWISE_DIV = 6;
  static final int CUDNN_POINTWISE_SUB = 9;
  static final int CUDNN_POINTWISE_EXP = 13;
  // cudnnReduceTensorOp_t
  static final int CUDNN_REDUCE_TENSOR_ADD = 0;
  static final int CUDNN_REDUCE_TENSOR_MAX = 3;
  // cudnnBackendHeurMode_t
  static final int CUDNN_HEUR_MODE_FALLBACK = 2;
  static final int CUDNN_HEUR_MODE_A = 3;

  static final MethodHandle cudnnGetVersion =
      Ffm.downcall(LIB, "cudnnGetVersion", FunctionDescriptor.of(LONG));
  static final MethodHandle cudnnGetErrorString =
      Ffm.downcall(LIB, "cudnnGetErrorString", FunctionDescriptor.of(PTR, INT));
  static final MethodHandle cudnnGetLastErrorString =
      Ffm.downcall(LIB, "cudnnGetLastErrorString", FunctionDescriptor.ofVoid(PTR, LONG));
  static final MethodHandle cudnnCreate = Ffm.status(LIB, "cudnnCreate", PTR);
  static final MethodHandle cudnnDestroy = Ffm.status(LIB, "cudnnDestroy", LONG);
  static final MethodHandle cudnnSetStream = Ffm.status(LIB, "cudnnSetStream", LONG, LONG);
  static final MethodHandle cudnnBackendCreateDescriptor =
      Ffm.status(LIB, "cudnnBackendCreateDescriptor", INT, PTR);
  static final MethodHandle cudnnBackendDestroyDescriptor =
      Ffm.status(LIB, "cudnnBackendDestroyDescriptor", LONG);
  static final MethodHandle cudnnBackendFinalize = Ffm.status(LIB, "cudnnBackendFinalize", LONG);
  static final MethodHandle cudnnBackendSetAttribute =
      Ffm.status(LIB, "cudnnBackendSetAttribute", LONG, INT, INT, LONG, PTR);
  static final MethodHandle cudnnBackendGetAttribute =
      Ffm.status(LIB, "cudnnBackendGetAttribute", LONG, INT, INT, LONG, PTR, PTR);
  static final MethodHandle cudnnBackendExecute =
      Ffm.status(LIB, "cudnnBackendExecute", LONG, LONG, LONG);

  /** The backend API through the functions above. */
  static final CudnnGraphApi GRAPH = new Native();

  private Cudnn() {}

  /** The library's version, e.g. 91400 for 9.14.0. */
  static long version() {
    try {
      return (long) cudnnGetVersion.invokeExact();
    } catch (Throwable t) {
      throw Ffm.rethrow("cudnnGetVersion", t);
    }
  }

  /** Calls a status-returning handle and throws a {@link CudaException} naming it on an error. */
  static void call(String name, Driver.CheckedCall call) {
    int status;
    try {
      status = call.invoke();
    } catch (Throwable t) {
      throw Ffm.rethrow(name, t);
    }
    if (status != CUDNN_STATUS_SUCCESS) {
      throw new CudaException(name, status, errorDetail(status));
    }
  }

  /** cuDNN's name for {@code status} and its last error message, on one line. */
  private static String errorDetail(int status) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment name = (MemorySegment) cudnnGetErrorString.invokeExact(status);
      MemorySegment last = arena.allocate(1024);
      cudnnGetLastErrorString.invokeExact(last, 1024L);
      String message = last.getString(0).replaceAll("\\s+", " ").strip();
      String text = name.reinterpret(256).getString(0);
      return message.isEmpty() ? text : text + ": " + message;
    } catch (Throwable t) {
      return "cudnnStatus_t " + status;
    }
  }

  /** {@link CudnnGraphApi} bound to libcudnn. */
  private static final class Native implements CudnnGraphApi {
    @Override
    public long create(int descriptorType) {
      try (Arena arena = Arena.ofConfined()) {
        MemorySegment out = arena.allocate(ValueLayout.JAVA_LONG);
        call(
            "cudnnBackendCreateDescriptor",
            () -> (int) cudnnBackendCreateDescriptor.invokeExact(descriptorType, out));
        return out.get(ValueLayout.JAVA_LONG, 0);
      }
    }

    @Override
    public void set(
        long descriptor, int attribute, int attributeType, long count, MemorySegment elements) {
      call(
          "cudnnBackendSetAttribute",
          () ->
              (int)
                  cudnnBackendSetAttribute.invokeExact(
                      descriptor, attribute, attributeType, count, elements));
    }

    @Override
    public long get(
        long descriptor, int attribute, int attributeType, long requested, MemorySegment elements) {
      try (Arena arena = Arena.ofConfined()) {
        MemorySegment count = arena.allocate(ValueLayout.JAVA_LONG);
        call(
            "cudnnBackendGetAttribute",
            () ->
                (int)
                    cudnnBackendGetAttribute.invokeExact(
                        descriptor, attribute, attributeType, requested, count, elements));
        return count.get(ValueLayout.JAVA_LONG, 0);
      }
    }

    @Override
    public void finish(long descriptor) {
      call("cudnnBackendFinalize", () -> (int) cudnnBackendFinalize.invokeExact(descriptor));
    }

    @Override
    public void destroy(long descriptor) {
      call(
          "cudnnBackendDestroyDescriptor",
          () -> (int) cudnnBackendDestroyDescriptor.invokeExact(descriptor));
    }
  }
}

package dev.stepweave.cuda.blas;

import static dev.stepweave.cuda.driver.Ffm.INT;
import static dev.stepweave.cuda.driver.Ffm.LONG;
import static dev.stepweave.cuda.driver.Ffm.PTR;

import dev.stepweave.cuda.driver.CudaException;
import dev.stepweave.cuda.driver.CudaLibraries;
import dev.stepweave.cuda.driver.Driver;
import dev.stepweave.cuda.driver.Ffm;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

/** cuBLASLt: one handle per C function, named after it, and the enum values we use. */
final class CublasLt {
  private static final SymbolLookup LIB = CudaLibraries.cublasLtLookup();

  // cudaDataType_t
  static final int CUDA_R_32F = 0;
  static final int CUDA_R_16BF = 14;
  // cublasComputeType_t
  static final int CUBLAS_COMPUTE_32F = 68;
  // cublasOperation_t
  static final int CUBLAS_OP_N = 0;
  static final int CUBLAS_OP_T = 1;
  // cublasLtMatmulDescAttributes_t
  static final int CUBLASLT_MATMUL_DESC_TRANSA = 3;
  static final int CUBLASLT_MATMUL_DESC_TRANSB = 4;
  static final int CUBLASLT_MATMUL_DESC_EPILOGUE = 7;
  static final int CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8;
  static final int CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE = 10;
  static final int CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE = 26;
  // cublasLtEpilogue_t
  static final int CUBLASLT_EPILOGUE_DEFAULT = 1;
  static final int CUBLASLT_EPILOGUE_BIAS = 4;
  static final int CUBLASLT_EPILOGUE_GELU = 32;
  static final int CUBLASLT_EPILOGUE_GELU_BIAS = 36;
  // cublasLtMatrixLayoutAttribute_t
  static final int CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5;
  static final int CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6;
  // cublasLtMatmulPreferenceAttributes_t
  static final int CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1;
  static final int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5;
  static final int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6;
  static final int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7;
  static final int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8;

  /** sizeof(cublasLtMatmulHeuristicResult_t): a 64-byte algo, size_t, int, float, int[4]. */
  static final long HEURISTIC_RESULT_BYTES = 96;

  /**
   * Where {@code cublasLtMatmulHeuristicResult_t.workspaceSize} (a size_t) sits: after the algo.
   */
  static final long HEURISTIC_RESULT_WORKSPACE_OFFSET = 64;

  static final MethodHandle cublasLtGetVersion =
      Ffm.downcall(LIB, "cublasLtGetVersion", FunctionDescriptor.of(LONG));
  static final MethodHandle cublasLtCreate = Ffm.status(LIB, "cublasLtCreate", PTR);
  static final MethodHandle cublasLtDestroy = Ffm.status(LIB, "cublasLtDestroy", LONG);
  static final MethodHandle cublasLtMatmulDescCreate =
      Ffm.status(LIB, "cublasLtMatmulDescCreate", PTR, INT, INT);
  static final MethodHandle cublasLtMatmulDescSetAttribute =
      Ffm.status(LIB, "cublasLtMatmulDescSetAttribute", LONG, INT, PTR, LONG);
  static final MethodHandle cublasLtMatrixLayoutCreate =
      Ffm.status(LIB, "cublasLtMatrixLayoutCreate", PTR, INT, LONG, LONG, LONG);
  static final MethodHandle cublasLtMatrixLayoutSetAttribute =
      Ffm.status(LIB, "cublasLtMatrixLayoutSetAttribute", LONG, INT, PTR, LONG);
  static final MethodHandle cublasLtMatmulPreferenceCreate =
      Ffm.status(LIB, "cublasLtMatmulPreferenceCreate", PTR);
  static final MethodHandle cublasLtMatmulPreferenceSetAttribute =
      Ffm.status(LIB, "cublasLtMatmulPreferenceSetAttribute", LONG, INT, PTR, LONG);
  static final MethodHandle cublasLtMatmulAlgoGetHeuristic =
      Ffm.status(
          LIB,
          "cublasLtMatmulAlgoGetHeuristic",
          LONG,
          LONG,
          LONG,
          LONG,
          LONG,
          LONG,
          LONG,
          INT,
          PTR,
          PTR);
  static final MethodHandle cublasLtMatmulAlgoCheck =
      Ffm.status(LIB, "cublasLtMatmulAlgoCheck", LONG, LONG, LONG, LONG, LONG, LONG, PTR, PTR);
  static final MethodHandle cublasLtMatmul =
      Ffm.status(
          LIB,
          "cublasLtMatmul",
          LONG,
          LONG,
          PTR,
          LONG,
          LONG,
          LONG,
          LONG,
          PTR,
          LONG,
          LONG,
          LONG,
          LONG,
          PTR,
          LONG,
          LONG,
          LONG);

  private CublasLt() {}

  static void call(String name, Driver.CheckedCall call) {
    int status;
    try {
      status = call.invoke();
    } catch (Throwable t) {
      throw Ffm.rethrow(name, t);
    }
    if (status != 0) {
      throw new CudaException(name, status, "cublasStatus_t " + status);
    }
  }
}

package dev.stepweave.cuda.blas;

import static dev.stepweave.cuda.blas.CublasLt.call;

import dev.stepweave.cuda.driver.CudaContext;
import dev.stepweave.cuda.driver.CudaException;
import dev.stepweave.cuda.tuning.Fastest;
import dev.stepweave.cuda.tuning.TimedChoices;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

/**
 * Row-major GEMMs through cuBLASLt: {@code C[M,N] = op(A)[M,K] · op(B)[K,N] (+ bias[N]) (then GELU,
 * tanh approximation)}, F32 or BF16 inputs, F32 accumulation, F32 or (from BF16 inputs) BF16
 * output; the bias has the output's type. cuBLASLt is column-major, so the call computes {@code Cᵀ
 * = op(B)ᵀ · op(A)ᵀ}: a row-major matrix is the column-major transpose of itself with the same
 * leading dimension. One plan (descriptors and chosen algorithm) is cached per shape; the bias
 * pointer is set per call.
 *
 * <p>The algorithm is chosen by measurement where it can matter: the heuristic's first {@value
 * #CANDIDATES} algorithms are timed (CUDA events, best of {@value #TIMED_RUNS} runs) on the buffers
 * of a shape's first call of at least {@value #TUNED_MIN_MACS} multiply-adds, and the fastest is
 * kept for the process and on disk beside the compiled kernels ({@link TimedChoices}), so a later
 * process takes it without timing. The heuristic's first runs a smaller shape, an accumulating call
 * (timing would add into C again and again), and a shape first met while a CUDA graph records (its
 * warm-up run normally settles the choice before).
 *
 * <p>Batch invariance: a shape whose M rows are items of {@link Shape#itemRows} rows each (the
 * requests of a batched transformer call) runs the algorithm chosen for one item's shape, whatever
 * the number of items, so an item's rows come out bit for bit as they do alone. cuBLASLt's
 * heuristic (and the timing) would otherwise pick per M — another tile or split-K for a larger
 * batch, another order of the K sum, other bits — and over a denoising trajectory those differences
 * grow past the BF16 bound (docs/serving-benchmark.md). Only where cuBLASLt says the item's
 * algorithm cannot run at the full M does the shape choose its own, and {@link #paths()} says so.
 */
public final class Gemm implements AutoCloseable {
  private static final long WORKSPACE_BYTES = 32L << 20;

  /** Algorithms asked of the heuristic per plan: the candidates a shape's first call times. */
  static final int CANDIDATES = 8;

  /** Timed runs per algorithm; the best counts (the first may pay for loading its kernel). */
  static final int TIMED_RUNS = 2;

  /**
   * Below this many multiply-adds (≈ 11 µs at 800 TFLOP/s) a GEMM is too short for another
   * algorithm to repay the timing: the heuristic's first.
   */
  static final long TUNED_MIN_MACS = 1L << 32;

  /** How the output is finished. */
  public enum Epilogue {
    NONE,
    BIAS,
    GELU_TANH,
    GELU_TANH_BIAS;

    boolean hasBias() {
      return this == BIAS || this == GELU_TANH_BIAS;
    }
  }

  /**
   * One GEMM's shape. A is stored row-major as [M,K] (or [K,M] when transposed) with leading
   * dimension lda; likewise B as [K,N] (or [N,K]); C as [M,N] with ldc. Batches are strided (a
   * stride of 0 shares the operand across the batch); the bias too, by {@code strideBias} (0: one
   * vector for every batch). A and B are BF16 when {@code bf16}, else F32; C is BF16 when {@code
   * bf16Out} (BF16 inputs only). The M rows are items of {@code itemRows} rows each ({@code m}: one
   * item), whose results must not depend on how many items share the call (the class comment).
   */
  public record Shape(
      int m,
      int n,
      int k,
      boolean transA,
      long lda,
      boolean transB,
      long ldb,
      long ldc,
      int batch,
      long strideA,
      long strideB,
      long strideC,
      long strideBias,
      boolean bf16,
      boolean bf16Out,
      Epilogue epilogue,
      int itemRows) {
    public Shape {
      if (bf16Out && !bf16) {
        throw new IllegalArgumentException("a BF16 GEMM output needs BF16 inputs");
      }
      if (m > 0 && (itemRows <= 0 || m % itemRows != 0 || (itemRows < m && transA))) {
        throw new IllegalArgumentException(
            "M = " + m + " is not a whole number of untransposed items of " + itemRows + " rows");
      }
    }

    /**
     * One item's GEMM: its first {@code itemRows} rows, read and written where the full shape's are
     * (a batch stride that spans M spans the item's rows instead).
     */
    Shape item() {
      long itemStrideA = !transA && strideA == (long) m * lda ? (long) itemRows * lda : strideA;
      long itemStrideC = strideC == (long) m * ldc ? (long) itemRows * ldc : strideC;
      return new Shape(
          itemRows,
          n,
          k,
          transA,
          lda,
          transB,
          ldb,
          ldc,
          batch,
          itemStrideA,
          strideB,
          itemStrideC,
          strideBias,
          bf16,
          bf16Out,
          epilogue,
          itemRows);
    }
  }

  /**
   * A plan is chosen for a shape and the alignment (bytes, a power of two up to 256) of each
   * operand's every batch: cuBLASLt's heuristic assumes 256-byte aligned buffers unless told less,
   * and a view at an offset (a slice of a stacked weight) may be less aligned than that.
   */
  private record PlanKey(Shape shape, int alignA, int alignB, int alignC) {}

  /**
   * A shape's descriptors, the heuristic's algorithms in its order, and the one that runs: the
   * first until the shape is {@code settled} (timed, read from disk, or left as it is).
   */
  private static final class Plan {
    final long desc;
    final long aLayout;
    final long bLayout;
    final long cLayout;
    final List<MemorySegment> algos;
    MemorySegment algo;
    boolean settled;
    String how = "heuristic's first, not run yet";

    Plan(long desc, long aLayout, long bLayout, long cLayout, List<MemorySegment> algos) {
      this.desc = desc;
      this.aLayout = aLayout;
      this.bLayout = bLayout;
      this.cLayout = cLayout;
      this.algos = List.copyOf(algos);
      this.algo = algos.getFirst();
    }
  }

  private final CudaContext context;
  private final long handle;
  private final long workspace;
  private final Path choicesDir;
  private final Arena arena = Arena.ofShared();
  private final Map<PlanKey, Plan> plans = new HashMap<>();
  private final MemorySegment one;
  private final MemorySegment zero;
  private TimedChoices timedBefore;

  /**
   * @param choicesDir where timed choices are kept across processes (the kernel cache), or null to
   *     keep them in this process only
   */
  public Gemm(CudaContext context, long workspace, Path choicesDir) {
    this.context = context;
    this.workspace = workspace;
    this.choicesDir = choicesDir;
    MemorySegment h = arena.allocate(ValueLayout.JAVA_LONG);
    call("cublasLtCreate", () -> (int) CublasLt.cublasLtCreate.invokeExact(h));
    this.handle = h.get(ValueLayout.JAVA_LONG, 0);
    this.one = arena.allocateFrom(ValueLayout.JAVA_FLOAT, 1f);
    this.zero = arena.allocateFrom(ValueLayout.JAVA_FLOAT, 0f);
  }

  /** The size of the workspace (device memory the caller keeps alive) cuBLASLt may use. */
  public static long workspaceBytes() {
    return WORKSPACE_BYTES;
  }

  /** {@code C = op(A)·op(B)}, finished by the shape's epilogue ({@code bias}: its vector or 0). */
  public void run(Shape s, long a, long b, long c, long bias) {
    matmul(s, one, zero, a, b, c, bias);
  }

  /**
   * {@code C = alpha·op(A)·op(B) + C}, in place: the product is added to what C holds, in F32, and
   * rounded once to C's type. The scalars are host values read when the call is issued, so a CUDA
   * graph records them by value.
   */
  public void accumulate(Shape s, float alpha, long a, long b, long c) {
    if (s.epilogue() != Epilogue.NONE) {
      throw new IllegalArgumentException("an accumulating GEMM has no epilogue, got " + s);
    }
    try (Arena tmp = Arena.ofConfined()) {
      matmul(s, tmp.allocateFrom(ValueLayout.JAVA_FLOAT, alpha), one, a, b, c, 0L);
    }
  }

  private void matmul(
      Shape s, MemorySegment alpha, MemorySegment beta, long a, long b, long c, long bias) {
    int element = s.bf16() ? 2 : 4;
    int outElement = s.bf16Out() ? 2 : 4;
    PlanKey key =
        new PlanKey(
            s,
            alignment(a, s.batch() == 1 ? 0 : s.strideA() * element),
            alignment(b, s.batch() == 1 ? 0 : s.strideB() * element),
            alignment(c, s.batch() == 1 ? 0 : s.strideC() * outElement));
    Plan p = plans.computeIfAbsent(key, this::plan);
    setBias(p, s, bias);
    if (!p.settled && s.itemRows() < s.m()) {
      // The item's rows are a prefix of the full operands, so its plan is settled on them.
      PlanKey itemKey = new PlanKey(s.item(), key.alignA(), key.alignB(), key.alignC());
      Plan item = plans.computeIfAbsent(itemKey, this::plan);
      if (!item.settled) {
        setBias(item, s, bias);
        settle(itemKey, item, alpha, beta, a, b, c);
      }
      String refused = adopt(p, item);
      if (refused != null) {
        settle(key, p, alpha, beta, a, b, c);
        p.how = "not batch-invariant (" + refused + "); " + p.how;
      }
    }
    if (!p.settled) {
      settle(key, p, alpha, beta, a, b, c);
    }
    launch(p, p.algo, alpha, beta, a, b, c);
  }

  private void setBias(Plan p, Shape s, long bias) {
    if (s.epilogue().hasBias()) {
      try (Arena tmp = Arena.ofConfined()) {
        MemorySegment ptr = tmp.allocateFrom(ValueLayout.JAVA_LONG, bias);
        setDesc(p.desc, CublasLt.CUBLASLT_MATMUL_DESC_BIAS_POINTER, ptr);
      }
    }
  }

  /**
   * Settles a batched plan on its item's algorithm when cuBLASLt accepts it at the full M (the
   * batch invariance of the class comment) within the workspace this class passes, returning null;
   * otherwise why not. The check accepts an algorithm whose workspace at this M exceeds ours (a
   * split-K one at many rows: 18 432 in a training batch), which the matmul itself then refuses
   * with status 7, so the workspace it reports is compared here.
   */
  private String adopt(Plan p, Plan item) {
    int status;
    long needs;
    try (Arena tmp = Arena.ofConfined()) {
      MemorySegment result = tmp.allocate(CublasLt.HEURISTIC_RESULT_BYTES, 8);
      status =
          (int)
              CublasLt.cublasLtMatmulAlgoCheck.invokeExact(
                  handle, p.desc, p.bLayout, p.aLayout, p.cLayout, p.cLayout, item.algo, result);
      needs = result.get(ValueLayout.JAVA_LONG, CublasLt.HEURISTIC_RESULT_WORKSPACE_OFFSET);
    } catch (Throwable t) {
      throw dev.stepweave.cuda.driver.Ffm.rethrow("cublasLtMatmulAlgoCheck", t);
    }
    if (status != 0) {
      return "its item's algorithm fails at this M: " + status;
    }
    if (needs > WORKSPACE_BYTES) {
      return "its item's algorithm needs " + needs + " bytes of workspace at this M";
    }
    p.algo = item.algo;
    p.settled = true;
    p.how = "its item's algorithm (batch-invariant): " + item.how;
    return null;
  }

  /**
   * Chooses the plan's algorithm for good: the one an earlier process timed for this key, else the
   * fastest on this call's buffers (the output is overwritten by the run that follows), else the
   * heuristic's first (see the class comment for when).
   */
  private void settle(
      PlanKey key, Plan p, MemorySegment alpha, MemorySegment beta, long a, long b, long c) {
    p.settled = true;
    Shape s = key.shape();
    long macs = (long) s.m() * s.n() * s.k() * s.batch();
    int n = p.algos.size();
    p.how =
        n == 1
            ? "the heuristic's only algorithm"
            : beta != zero
                ? "heuristic's first of " + n + " (an accumulating call is not timed)"
                : context.isCapturing()
                    ? "heuristic's first of " + n + ", untimed (met in a CUDA graph)"
                    : macs < TUNED_MIN_MACS
                        ? "heuristic's first of " + n + " (too small to time)"
                        : null;
    if (p.how != null) {
      return;
    }
    String stored = key.toString();
    var earlier = timedBefore().lookup(stored, i -> label(p.algos.get(i)), n);
    if (earlier.isPresent()) {
      p.algo = p.algos.get(earlier.get());
      p.how =
          "algo " + earlier.get() + " of " + n + ", timed by an earlier process (on-disk choice)";
      return;
    }
    List<Integer> indices = IntStream.range(0, p.algos.size()).boxed().toList();
    Fastest.Timed<Integer> timed =
        Fastest.of(
            indices,
            TIMED_RUNS,
            i -> context.time(() -> launch(p, p.algos.get(i), alpha, beta, a, b, c)),
            i -> "algo " + i);
    if (timed == null) {
      p.how = "heuristic's first of " + n + "; every timed algorithm failed";
      return;
    }
    p.algo = p.algos.get(timed.choice());
    timedBefore().record(stored, timed.choice(), label(p.algo));
    p.how =
        String.format(
            "algo %d, fastest of %d timed: %.3f ms [%s]",
            timed.choice(), n, timed.ms(), String.join(", ", timed.times()));
  }

  /** Every GEMM shape seen so far and how its algorithm was chosen, one per line. */
  public String paths() {
    StringBuilder out = new StringBuilder();
    plans.forEach(
        (key, plan) ->
            out.append(key.shape())
                .append(" align ")
                .append(key.alignA())
                .append('/')
                .append(key.alignB())
                .append('/')
                .append(key.alignC())
                .append(": ")
                .append(plan.how)
                .append('\n'));
    return out.isEmpty() ? "none yet" : out.toString().stripTrailing();
  }

  /** An algorithm's identity for the on-disk record: its opaque bytes, in hex. */
  private static String label(MemorySegment algo) {
    return HexFormat.of().formatHex(algo.toArray(ValueLayout.JAVA_BYTE));
  }

  /** The choices earlier processes timed (read on first use). */
  private TimedChoices timedBefore() {
    if (timedBefore == null) {
      timedBefore =
          TimedChoices.open(
              choicesDir, "cublaslt", context.name(), context.arch(), "cublasLt" + version());
    }
    return timedBefore;
  }

  /** cuBLASLt's version number (e.g. 130100 for 13.1.0). */
  static long version() {
    try {
      return (long) CublasLt.cublasLtGetVersion.invokeExact();
    } catch (Throwable t) {
      throw dev.stepweave.cuda.driver.Ffm.rethrow("cublasLtGetVersion", t);
    }
  }

  private void launch(
      Plan p, MemorySegment algo, MemorySegment alpha, MemorySegment beta, long a, long b, long c) {
    // cuBLASLt's A is our B and its B is our A (see the class comment).
    long stream = context.stream();
    long ws = workspace;
    long wsBytes = WORKSPACE_BYTES;
    call(
        "cublasLtMatmul",
        () ->
            (int)
                CublasLt.cublasLtMatmul.invokeExact(
                    handle, p.desc, alpha, b, p.bLayout, a, p.aLayout, beta, c, p.cLayout, c,
                    p.cLayout, algo, ws, wsBytes, stream));
  }

  /** The largest power of two up to 256 dividing the address and the batch stride (bytes). */
  private static int alignment(long address, long strideBytes) {
    long bits = address | strideBytes | 256;
    return (int) Long.lowestOneBit(bits);
  }

  private Plan plan(PlanKey key) {
    Shape s = key.shape();
    int inType = s.bf16() ? CublasLt.CUDA_R_16BF : CublasLt.CUDA_R_32F;
    MemorySegment out = arena.allocate(ValueLayout.JAVA_LONG);
    call(
        "cublasLtMatmulDescCreate",
        () ->
            (int)
                CublasLt.cublasLtMatmulDescCreate.invokeExact(
                    out, CublasLt.CUBLAS_COMPUTE_32F, CublasLt.CUDA_R_32F));
    long desc = out.get(ValueLayout.JAVA_LONG, 0);
    // Column-major view: cuBLAS-A = our B; our B stored [K,N] row-major is col-major [N,K] = the
    // operand itself (no transpose); stored [N,K] it needs a transpose. Same for cuBLAS-B = our A.
    int opA = s.transB() ? CublasLt.CUBLAS_OP_T : CublasLt.CUBLAS_OP_N;
    int opB = s.transA() ? CublasLt.CUBLAS_OP_T : CublasLt.CUBLAS_OP_N;
    setDesc(
        desc, CublasLt.CUBLASLT_MATMUL_DESC_TRANSA, arena.allocateFrom(ValueLayout.JAVA_INT, opA));
    setDesc(
        desc, CublasLt.CUBLASLT_MATMUL_DESC_TRANSB, arena.allocateFrom(ValueLayout.JAVA_INT, opB));
    int epilogue =
        switch (s.epilogue()) {
          case NONE -> CublasLt.CUBLASLT_EPILOGUE_DEFAULT;
          case BIAS -> CublasLt.CUBLASLT_EPILOGUE_BIAS;
          case GELU_TANH -> CublasLt.CUBLASLT_EPILOGUE_GELU;
          case GELU_TANH_BIAS -> CublasLt.CUBLASLT_EPILOGUE_GELU_BIAS;
        };
    setDesc(
        desc,
        CublasLt.CUBLASLT_MATMUL_DESC_EPILOGUE,
        arena.allocateFrom(ValueLayout.JAVA_INT, epilogue));
    int outType = s.bf16Out() ? CublasLt.CUDA_R_16BF : CublasLt.CUDA_R_32F;
    if (s.epilogue().hasBias()) {
      // The default (-1) also means "the output's type"; stated so the pairing is explicit.
      setDesc(
          desc,
          CublasLt.CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
          arena.allocateFrom(ValueLayout.JAVA_INT, outType));
      if (s.batch() > 1 && s.strideBias() != 0) {
        setDesc(
            desc,
            CublasLt.CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE,
            arena.allocateFrom(ValueLayout.JAVA_LONG, s.strideBias()));
      }
    }
    // cuBLAS-B layout (our B): rows x cols as stored column-major.
    long bLayout =
        s.transB()
            ? layout(inType, s.k(), s.n(), s.ldb(), s)
            : layout(inType, s.n(), s.k(), s.ldb(), s);
    long aLayout =
        s.transA()
            ? layout(inType, s.m(), s.k(), s.lda(), s)
            : layout(inType, s.k(), s.m(), s.lda(), s);
    long cLayout = layout(outType, s.n(), s.m(), s.ldc(), s);
    setBatch(bLayout, s.batch(), s.strideB());
    setBatch(aLayout, s.batch(), s.strideA());
    setBatch(cLayout, s.batch(), s.strideC());

    MemorySegment pref = arena.allocate(ValueLayout.JAVA_LONG);
    call(
        "cublasLtMatmulPreferenceCreate",
        () -> (int) CublasLt.cublasLtMatmulPreferenceCreate.invokeExact(pref));
    long preference = pref.get(ValueLayout.JAVA_LONG, 0);
    MemorySegment wsBytes = arena.allocateFrom(ValueLayout.JAVA_LONG, WORKSPACE_BYTES);
    call(
        "cublasLtMatmulPreferenceSetAttribute",
        () ->
            (int)
                CublasLt.cublasLtMatmulPreferenceSetAttribute.invokeExact(
                    preference, CublasLt.CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, wsBytes, 8L));
    // cuBLAS-A is our B, cuBLAS-B our A; C and D are one buffer (our C).
    setPreference(preference, CublasLt.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.alignB());
    setPreference(preference, CublasLt.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.alignA());
    setPreference(preference, CublasLt.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.alignC());
    setPreference(preference, CublasLt.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.alignC());
    MemorySegment results = arena.allocate(CublasLt.HEURISTIC_RESULT_BYTES * CANDIDATES, 8);
    MemorySegment count = arena.allocate(ValueLayout.JAVA_INT);
    call(
        "cublasLtMatmulAlgoGetHeuristic",
        () ->
            (int)
                CublasLt.cublasLtMatmulAlgoGetHeuristic.invokeExact(
                    handle,
                    desc,
                    bLayout,
                    aLayout,
                    cLayout,
                    cLayout,
                    preference,
                    CANDIDATES,
                    results,
                    count));
    int found = count.get(ValueLayout.JAVA_INT, 0);
    if (found == 0) {
      throw new CudaException("cublasLtMatmulAlgoGetHeuristic", 0, "no algorithm for " + s);
    }
    // Each result's algorithm is its first 64 bytes.
    List<MemorySegment> algos = new ArrayList<>(found);
    for (int i = 0; i < found; i++) {
      algos.add(results.asSlice(i * CublasLt.HEURISTIC_RESULT_BYTES, 64));
    }
    return new Plan(desc, aLayout, bLayout, cLayout, algos);
  }

  private long layout(int type, long rows, long cols, long ld, Shape s) {
    MemorySegment out = arena.allocate(ValueLayout.JAVA_LONG);
    call(
        "cublasLtMatrixLayoutCreate",
        () -> (int) CublasLt.cublasLtMatrixLayoutCreate.invokeExact(out, type, rows, cols, ld));
    return out.get(ValueLayout.JAVA_LONG, 0);
  }

  private void setBatch(long layout, int batch, long stride) {
    if (batch == 1) {
      return;
    }
    MemorySegment count = arena.allocateFrom(ValueLayout.JAVA_INT, batch);
    MemorySegment offset = arena.allocateFrom(ValueLayout.JAVA_LONG, stride);
    call(
        "cublasLtMatrixLayoutSetAttribute",
        () ->
            (int)
                CublasLt.cublasLtMatrixLayoutSetAttribute.invokeExact(
                    layout, CublasLt.CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, count, 4L));
    call(
        "cublasLtMatrixLayoutSetAttribute",
        () ->
            (int)
                CublasLt.cublasLtMatrixLayoutSetAttribute.invokeExact(
                    layout, CublasLt.CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, offset, 8L));
  }

  private void setPreference(long preference, int attribute, int value) {
    MemorySegment v = arena.allocateFrom(ValueLayout.JAVA_INT, value);
    call(
        "cublasLtMatmulPreferenceSetAttribute",
        () ->
            (int)
                CublasLt.cublasLtMatmulPreferenceSetAttribute.invokeExact(
                    preference, attribute, v, 4L));
  }

  private static void setDesc(long desc, int attribute, MemorySegment value) {
    long size = value.byteSize();
    call(
        "cublasLtMatmulDescSetAttribute",
        () ->
            (int)
                CublasLt.cublasLtMatmulDescSetAttribute.invokeExact(desc, attribute, value, size));
  }

  @Override
  public void close() {
    call("cublasLtDestroy", () -> (int) CublasLt.cublasLtDestroy.invokeExact(handle));
    arena.close();
  }
}

package dev.stepweave.cuda.cudnn;

import dev.stepweave.cuda.driver.CudaContext;
import dev.stepweave.cuda.driver.CudaException;
import dev.stepweave.cuda.driver.CudaLibraries;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.UnaryOperator;

/**
 * What a backend's cuDNN graph users share: the library check and the {@code cudnnHandle_t} (bound
 * to the backend's stream), opened on first use, and the common steps of running a graph: tensor
 * descriptors, the operation graph, the choice of an engine configuration that finalizes into an
 * execution plan, and execution with a variant pack. Without cuDNN {@link #ready} is false after
 * one notice, and the users run our own kernels.
 */
public final class CudnnRuntime implements AutoCloseable {
  static final int MAX_ALIGNMENT = 16;
  private static final AtomicBoolean NOTICED = new AtomicBoolean();

  /** A finalized execution plan and the descriptors it keeps alive. */
  record Plan(CudnnDescriptors owned, CudnnDescriptor plan, long workspaceBytes, String engine) {}

  private final CudaContext context;
  private final UnaryOperator<CudnnGraphApi> wrap;
  private CudnnGraphApi api;
  private long handle;
  private String version;
  private String unavailable;

  public CudnnRuntime(CudaContext context) {
    this(context, UnaryOperator.identity());
  }

  /** A runtime whose graph calls go through {@code wrap(libcudnn)}: tests make cuDNN refuse. */
  CudnnRuntime(CudaContext context, UnaryOperator<CudnnGraphApi> wrap) {
    this.context = context;
    this.wrap = wrap;
  }

  /** Whether cuDNN 9 is loaded and the handle open (tried once; a notice says why not). */
  boolean ready() {
    if (api != null) {
      return true;
    }
    if (unavailable != null) {
      return false;
    }
    try {
      CudaLibraries libs = CudaLibraries.current();
      if (libs.cudnn().isEmpty()) {
        unavailable = libs.cudnnNotice();
      } else {
        open();
      }
    } catch (RuntimeException | LinkageError e) {
      unavailable =
          "cuDNN not available ("
              + e.getMessage()
              + "); attention and convolutions use our own kernels";
    }
    if (unavailable != null && NOTICED.compareAndSet(false, true)) {
      System.err.println("NOTICE: " + unavailable);
    }
    return unavailable == null;
  }

  private void open() {
    long v = Cudnn.version();
    version = v / 10000 + "." + v / 100 % 100 + "." + v % 100;
    if (v < 90000) {
      unavailable =
          "cuDNN " + version + " is older than 9; attention and convolutions use our own kernels";
      return;
    }
    context.bind();
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = arena.allocate(ValueLayout.JAVA_LONG);
      Cudnn.call("cudnnCreate", () -> (int) Cudnn.cudnnCreate.invokeExact(out));
      handle = out.get(ValueLayout.JAVA_LONG, 0);
    }
    long h = handle;
    long stream = context.stream();
    Cudnn.call("cudnnSetStream", () -> (int) Cudnn.cudnnSetStream.invokeExact(h, stream));
    api = wrap.apply(Cudnn.GRAPH);
  }

  CudnnGraphApi api() {
    return api;
  }

  long handle() {
    return handle;
  }

  /** The library's version as "9.14.0" (once {@link #ready}). */
  String version() {
    return version;
  }

  /** Why cuDNN is not used (once {@link #ready} said false). */
  String unavailable() {
    return unavailable;
  }

  /**
   * Execution plans to choose among, in the heuristics' order, and how many configurations were
   * passed over for needing more workspace than allowed, and for their numerics.
   */
  record Candidates(List<Plan> plans, int overWorkspace, int lossy) {}

  // cudnnBackendNumericalNote_t values.
  static final int NOTE_REDUCED_PRECISION_REDUCTION = 2;
  static final int NOTE_FFT = 3;
  static final int NOTE_WINOGRAD = 5;
  static final int NOTE_WINOGRAD_TILE_4X4 = 6;
  static final int NOTE_WINOGRAD_TILE_6X6 = 7;
  static final int NOTE_WINOGRAD_TILE_13X13 = 8;
  private static final int NOTE_TYPES = 10;

  /**
   * Engines whose numerics are looser than the data type's: partial sums kept in the data type
   * (BF16 partials over a 27 648-term convolution sum), FFT and Winograd transforms.
   */
  static final Set<Integer> LOSSY_NOTES =
      Set.of(
          NOTE_REDUCED_PRECISION_REDUCTION,
          NOTE_FFT,
          NOTE_WINOGRAD,
          NOTE_WINOGRAD_TILE_4X4,
          NOTE_WINOGRAD_TILE_6X6,
          NOTE_WINOGRAD_TILE_13X13);

  /**
   * Up to {@code limit} engine configurations of heuristics mode A that finalize into execution
   * plans needing at most {@code maxWorkspace} bytes of workspace, in the heuristics' order; only
   * when mode A gives none, the same from the fallback list. When neither gives any, no plans, and
   * the reason is added to {@code refusals}, labelled.
   */
  static Candidates candidates(
      CudnnDescriptors g,
      CudnnDescriptor graph,
      int limit,
      long maxWorkspace,
      Set<Integer> excludedNotes,
      List<String> refusals,
      String label) {
    String last = "the heuristics offered no engine configuration";
    List<Plan> plans = new ArrayList<>();
    int overWorkspace = 0;
    int lossy = 0;
    for (int mode : new int[] {Cudnn.CUDNN_HEUR_MODE_A, Cudnn.CUDNN_HEUR_MODE_FALLBACK}) {
      List<CudnnDescriptor> configs;
      try {
        CudnnDescriptor heuristics =
            g.create(Cudnn.CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR)
                .descriptors(Cudnn.CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph)
                .enumValue(Cudnn.CUDNN_ATTR_ENGINEHEUR_MODE, Cudnn.CUDNN_TYPE_HEUR_MODE, mode)
                .finish();
        configs =
            heuristics.descriptors(
                Cudnn.CUDNN_ATTR_ENGINEHEUR_RESULTS, Cudnn.CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, g);
      } catch (CudaException e) {
        last = e.getMessage();
        continue;
      }
      for (CudnnDescriptor config : configs) {
        if (plans.size() == limit) {
          break;
        }
        if (!excludedNotes.isEmpty() && hasAny(config, g, excludedNotes)) {
          lossy++;
          last = "every engine's numerics are excluded " + excludedNotes;
          continue;
        }
        try {
          CudnnDescriptor plan =
              g.create(Cudnn.CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR)
                  .descriptors(Cudnn.CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config)
                  .finish();
          long workspace = plan.int64(Cudnn.CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE);
          if (workspace > maxWorkspace) {
            overWorkspace++;
            last = "every plan needs more than " + maxWorkspace + " B of workspace";
            continue;
          }
          plans.add(new Plan(g, plan, workspace, engineIndex(config, g)));
        } catch (CudaException e) {
          last = e.getMessage();
        }
      }
      if (!plans.isEmpty()) {
        return new Candidates(List.copyOf(plans), overWorkspace, lossy);
      }
    }
    refusals.add(label + ": " + last);
    return new Candidates(List.of(), overWorkspace, lossy);
  }

  /** Whether the configuration's engine carries any of {@code notes} (false if cuDNN won't say). */
  private static boolean hasAny(CudnnDescriptor config, CudnnDescriptors g, Set<Integer> notes) {
    try {
      CudnnDescriptor engine =
          config
              .descriptors(
                  Cudnn.CUDNN_ATTR_ENGINECFG_ENGINE, Cudnn.CUDNN_BACKEND_ENGINE_DESCRIPTOR, g)
              .getFirst();
      for (int note :
          engine.enums(
              Cudnn.CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
              Cudnn.CUDNN_TYPE_NUMERICAL_NOTE,
              NOTE_TYPES)) {
        if (notes.contains(note)) {
          return true;
        }
      }
      return false;
    } catch (CudaException | NoSuchElementException e) {
      return false;
    }
  }

  /** The engine's global index, for the description only ("?" if cuDNN won't say). */
  private static String engineIndex(CudnnDescriptor config, CudnnDescriptors g) {
    try {
      CudnnDescriptor engine =
          config
              .descriptors(
                  Cudnn.CUDNN_ATTR_ENGINECFG_ENGINE, Cudnn.CUDNN_BACKEND_ENGINE_DESCRIPTOR, g)
              .getFirst();
      return Long.toString(engine.int64(Cudnn.CUDNN_ATTR_ENGINE_GLOBAL_INDEX));
    } catch (CudaException | NoSuchElementException e) {
      return "?";
    }
  }

  /**
   * Runs {@code plan} on the backend's stream with the tensors {@code uids} at {@code pointers}
   * (device addresses, or host addresses of pass-by-value scalars) and a workspace of at least the
   * plan's size at {@code workspace} (0 when it needs none).
   */
  void execute(Plan plan, long workspace, long[] uids, long[] pointers) {
    try (CudnnDescriptors call = new CudnnDescriptors(api)) {
      CudnnDescriptor pack =
          call.create(Cudnn.CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)
              .pointers(Cudnn.CUDNN_ATTR_VARIANT_PACK_WORKSPACE, workspace)
              .pointers(Cudnn.CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, pointers)
              .int64s(Cudnn.CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, uids)
              .finish();
      long h = handle, p = plan.plan().handle(), vp = pack.handle();
      Cudnn.call(
          "cudnnBackendExecute", () -> (int) Cudnn.cudnnBackendExecute.invokeExact(h, p, vp));
    }
  }

  @Override
  public void close() {
    if (api != null) {
      long h = handle;
      Cudnn.call("cudnnDestroy", () -> (int) Cudnn.cudnnDestroy.invokeExact(h));
      api = null;
    }
  }

  // ---- graph pieces ---------------------------------------------------------------------------

  /** A finalized tensor descriptor; a virtual one is an intermediate that never reaches memory. */
  static CudnnDescriptor tensor(
      CudnnDescriptors g,
      long uid,
      int dataType,
      long[] dims,
      long[] strides,
      int alignment,
      boolean virtual) {
    CudnnDescriptor t =
        g.create(Cudnn.CUDNN_BACKEND_TENSOR_DESCRIPTOR)
            .dataType(Cudnn.CUDNN_ATTR_TENSOR_DATA_TYPE, dataType)
            .int64s(Cudnn.CUDNN_ATTR_TENSOR_DIMENSIONS, dims)
            .int64s(Cudnn.CUDNN_ATTR_TENSOR_STRIDES, strides)
            .int64s(Cudnn.CUDNN_ATTR_TENSOR_UNIQUE_ID, uid)
            .int64s(Cudnn.CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, alignment);
    if (virtual) {
      t.bool(Cudnn.CUDNN_ATTR_TENSOR_IS_VIRTUAL, true);
    }
    return t.finish();
  }

  /** {@code y = mode(x, b)} with F32 math, or {@code mode(x)} when {@code b} is null. */
  static CudnnDescriptor pointwise(
      CudnnDescriptors g, int mode, CudnnDescriptor x, CudnnDescriptor b, CudnnDescriptor y) {
    CudnnDescriptor desc =
        g.create(Cudnn.CUDNN_BACKEND_POINTWISE_DESCRIPTOR)
            .enumValue(Cudnn.CUDNN_ATTR_POINTWISE_MODE, Cudnn.CUDNN_TYPE_POINTWISE_MODE, mode)
            .dataType(Cudnn.CUDNN_ATTR_POINTWISE_MATH_PREC, Cudnn.CUDNN_DATA_FLOAT)
            .finish();
    CudnnDescriptor op =
        g.create(Cudnn.CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR)
            .descriptors(Cudnn.CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, desc)
            .descriptors(Cudnn.CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
    if (b != null) {
      op.descriptors(Cudnn.CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b);
    }
    return op.descriptors(Cudnn.CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y).finish();
  }

  /** The finalized operation graph of {@code operations} for {@code cudnnHandle}. */
  static CudnnDescriptor operationGraph(
      CudnnDescriptors g, long cudnnHandle, CudnnDescriptor... operations) {
    return g.create(Cudnn.CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR)
        .descriptors(Cudnn.CUDNN_ATTR_OPERATIONGRAPH_OPS, operations)
        .cudnnHandle(Cudnn.CUDNN_ATTR_OPERATIONGRAPH_HANDLE, cudnnHandle)
        .finish();
  }

  /** The largest power of two up to 16 dividing {@code address}. */
  static int alignment(long address) {
    return (int) Long.lowestOneBit(address | MAX_ALIGNMENT);
  }
}

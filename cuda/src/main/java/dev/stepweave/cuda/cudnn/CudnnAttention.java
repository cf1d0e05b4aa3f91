package dev.stepweave.cuda.cudnn;

import static dev.stepweave.cuda.cudnn.Cudnn.CUDNN_DATA_BFLOAT16;
import static dev.stepweave.cuda.cudnn.Cudnn.CUDNN_DATA_FLOAT;

import dev.stepweave.cuda.cudnn.CudnnRuntime.Plan;
import dev.stepweave.cuda.driver.CudaException;
import dev.stepweave.cuda.memory.DeviceTensors;
import dev.stepweave.cuda.tuning.Fastest;
import dev.stepweave.cuda.tuning.TimedChoices;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Bias-free attention through cuDNN's fused scaled-dot-product attention, built with the backend
 * (graph) API. Our tensors are [B, L, H, D] (BSHD); cuDNN is given dims [B, H, L, D] with the
 * matching strides, so views pass without a copy. BF16 in and out, F32 softmax and accumulation,
 * the scale a pass-by-value F32 scalar.
 *
 * <p>For each {@link Key} the choice is made once and cached: the unified {@code SDPA_FWD}
 * operation (cuDNN ≥ 9.13.1), else the composite graph matmul → scale → softmax (max, sub, exp,
 * sum, div) → matmul that cuDNN fuses into one kernel on Hopper, else nothing: {@link #attention}
 * returns null and the caller runs our own kernel. Without cuDNN every call returns null after one
 * notice. Within the graph cuDNN takes, the engine configuration is chosen by measurement as for
 * the convolutions ({@link CudnnConvolution}): the key's first run times up to {@value
 * #TUNED_CONFIGS} of the heuristics' plans on its own buffers and keeps the fastest, in the process
 * and on disk beside the compiled kernels; a key first met while a CUDA graph records keeps the
 * heuristics' first.
 */
public final class CudnnAttention implements AutoCloseable {
  // Unique ids of the graph's tensors, as cudnn-frontend numbers them.
  static final long Q = 0;
  static final long K = 1;
  static final long V = 2;
  static final long O = 3;
  static final long SCALE = 5;
  private static final int MAX_ALIGNMENT = CudnnRuntime.MAX_ALIGNMENT;

  /** How many of the heuristics' engine configurations are timed per key. */
  static final int TUNED_CONFIGS = 8;

  /** Timed runs per plan; the best counts (the first may pay for lazy loading). */
  static final int TIMED_RUNS = 2;

  /** Why a choice was not timed: running candidates while a graph records would record them. */
  private static final String UNTIMED_IN_GRAPH = "untimed (met in a CUDA graph)";

  /** Element strides of a [B, L, H, D] view. */
  record Strides(long b, long l, long h, long d) {
    static Strides contiguous(int l, int h, int d) {
      return new Strides((long) l * h * d, (long) h * d, d, 1);
    }

    /** In cuDNN's dims order [B, H, L, D]. */
    long[] bhld() {
      return new long[] {b, h, l, d};
    }
  }

  /**
   * Everything a plan depends on: sizes, the q/k/v strides (the output is always contiguous), and
   * the largest power of two up to 16 dividing every input's byte address.
   */
  record Key(
      int b, int lq, int lk, int h, int d, int dv, Strides q, Strides k, Strides v, int alignment) {
    Strides o() {
      return Strides.contiguous(lq, h, dv);
    }

    /** The key of the batch's first item alone (a view at the same address, same strides). */
    Key item() {
      return new Key(1, lq, lk, h, d, dv, q, k, v, alignment);
    }
  }

  /** The two graphs tried, in order. */
  enum Variant {
    UNIFIED("unified SDPA op"),
    COMPOSITE("composite matmul-softmax-matmul graph");

    final String label;

    Variant(String label) {
      this.label = label;
    }
  }

  /**
   * A key's outcome: a plan and what it is, or null and why cuDNN was not used; {@code untimed}
   * holds the plans the key's first run times (empty once chosen). A batch's choice may instead run
   * {@code perItem} (true: each item alone, as its own key chooses), or hold its batch-1 item's
   * engine in {@code plan} still to be {@code checked} against the items run alone at its first
   * run.
   */
  private record Choice(
      Plan plan,
      Variant variant,
      String description,
      List<Plan> untimed,
      boolean perItem,
      boolean checked) {
    Choice(Plan plan, Variant variant, String description, List<Plan> untimed) {
      this(plan, variant, description, untimed, false, true);
    }

    static Choice perItem(String description) {
      return new Choice(null, null, description, List.of(), true, true);
    }
  }

  private final DeviceTensors tensors;
  private final CudnnRuntime cudnn;
  private final Map<Key, Choice> choices = new HashMap<>();
  private TimedChoices timedBefore;

  public CudnnAttention(DeviceTensors tensors, CudnnRuntime cudnn) {
    this.tensors = tensors;
    this.cudnn = cudnn;
  }

  /**
   * {@code softmax(q·kᵀ·scale)·v} of [B, L, H, D] device-or-host q, k, v (validated by the caller)
   * as a BF16 [B, Lq, H, Dv] tensor, or null when cuDNN is missing or refuses this shape.
   */
  public Tensor attention(Tensor q, Tensor k, Tensor v, float scale) {
    int b = q.dim(0), lq = q.dim(1), h = q.dim(2), lk = k.dim(1), dv = v.dim(3);
    if ((long) b * lq * h * dv * lk == 0 || !cudnn.ready()) {
      return null;
    }
    Tensor qh = tensors.onDevice(q), kh = tensors.onDevice(k), vh = tensors.onDevice(v);
    Key key = key(qh, kh, vh);
    Choice choice = choiceFor(key, qh, kh, vh, scale);
    Tensor out = null;
    boolean itemsAlone = choice.perItem() || !choice.checked();
    if ((choice.plan() != null || choice.perItem())
        && (!itemsAlone || itemsTaken(qh, kh, vh, scale))) {
      out = tensors.empty(DType.BF16, b, lq, h, dv);
      run(key, choice, qh, kh, vh, out, scale);
    }
    // Uploads and conversions go back once the work reading them is issued (stream order).
    tensors.releaseDerived(qh, q);
    tensors.releaseDerived(kh, k);
    tensors.releaseDerived(vh, v);
    return out;
  }

  /** What runs this attention: cuDNN's variant and engine, or why cuDNN does not. */
  public String describe(Tensor q, Tensor k, Tensor v) {
    if (!cudnn.ready()) {
      return "not cuDNN: " + cudnn.unavailable();
    }
    Tensor qh = tensors.onDevice(q), kh = tensors.onDevice(k), vh = tensors.onDevice(v);
    // A batch's first item may run here to settle its choice (the scale does not matter to it).
    String description = choiceFor(key(qh, kh, vh), qh, kh, vh, 1f).description();
    tensors.releaseDerived(qh, q);
    tensors.releaseDerived(kh, k);
    tensors.releaseDerived(vh, v);
    return description;
  }

  /** Runs {@code choice} of {@code key} on device q, k, v into the BF16 {@code out}. */
  private void run(Key key, Choice choice, Tensor q, Tensor k, Tensor v, Tensor out, float scale) {
    if (!choice.checked() && tensors.context().isCapturing()) {
      // The check runs the batch twice, which a recording graph would keep: items alone instead.
      choice.plan().owned().close();
      choice =
          Choice.perItem(
              "each item alone (its batch-1 item's engine unchecked: " + UNTIMED_IN_GRAPH + ")");
      choices.put(key, choice);
    }
    if (choice.perItem()) {
      runItems(q, k, v, out, scale);
      return;
    }
    Tensor qb = bf16(q), kb = bf16(k), vb = bf16(v);
    long wsBytes = choice.plan().workspaceBytes();
    for (Plan p : choice.untimed()) {
      wsBytes = Math.max(wsBytes, p.workspaceBytes());
    }
    Tensor ws = wsBytes == 0 ? null : tensors.empty(DType.I32, Math.toIntExact((wsBytes + 3) / 4));
    Plan plan =
        choice.untimed().isEmpty() ? choice.plan() : tune(key, choice, ws, qb, kb, vb, out, scale);
    execute(plan, ws, qb, kb, vb, out, scale);
    if (!choice.checked()) {
      // The items alone from the views the batch was given, as their keys were checked.
      check(key, choice, q, k, v, out, scale);
    }
    tensors.releaseDerived(ws, out);
    tensors.releaseDerived(qb, q);
    tensors.releaseDerived(kb, k);
    tensors.releaseDerived(vb, v);
  }

  /**
   * Whether cuDNN takes each item alone (an item's view may be less aligned than the first's, and
   * its own key may be refused): else the caller's kernel runs the batch, as it runs such an item.
   */
  private boolean itemsTaken(Tensor q, Tensor k, Tensor v, float scale) {
    for (int i = 0; i < q.dim(0); i++) {
      Tensor qi = q.slice(0, i, i + 1), ki = k.slice(0, i, i + 1), vi = v.slice(0, i, i + 1);
      if (choiceFor(key(qi, ki, vi), qi, ki, vi, scale).plan() == null) {
        return false;
      }
    }
    return true;
  }

  /**
   * Each item of the batch as its own batch-1 key runs it, into its rows of {@code out} ({@link
   * #itemsTaken} said each has a plan).
   */
  private void runItems(Tensor q, Tensor k, Tensor v, Tensor out, float scale) {
    for (int i = 0; i < q.dim(0); i++) {
      Tensor qi = q.slice(0, i, i + 1), ki = k.slice(0, i, i + 1), vi = v.slice(0, i, i + 1);
      Key itemKey = key(qi, ki, vi);
      run(
          itemKey,
          choiceFor(itemKey, qi, ki, vi, scale),
          qi,
          ki,
          vi,
          out.slice(0, i, i + 1),
          scale);
    }
  }

  /**
   * Settles a batch's choice at its first run: the batched plan (its batch-1 item's engine) where
   * every item of {@code out} holds the bits the item gets alone, else each item alone — an
   * engine's configuration at another batch size may split and sum the keys otherwise, so a test of
   * the output, not the engine's index, decides.
   */
  private void check(
      Key key, Choice choice, Tensor q, Tensor k, Tensor v, Tensor out, float scale) {
    Tensor alone = tensors.empty(DType.BF16, out.shape());
    runItems(q, k, v, alone, scale);
    Tensor batched = tensors.downloadRaw(out), items = tensors.downloadRaw(alone);
    boolean same =
        MemorySegment.mismatch(
                batched.segment(), 0, batched.byteSize(), items.segment(), 0, items.byteSize())
            == -1;
    if (same) {
      choices.put(
          key,
          settled(
              choice, choice.plan(), "its batch-1 item's engine, each item's bits checked alone"));
    } else {
      // The download synchronised: nothing queued still reads the batched plan.
      choice.plan().owned().close();
      choices.put(
          key,
          Choice.perItem(
              "each item alone: batched, its batch-1 item's engine "
                  + choice.plan().engine()
                  + " gave other bits than the items alone"));
      tensors.copy(alone, out);
    }
    tensors.release(alone);
  }

  /** The plan key of device tensors q, k, v as {@link #bf16} will pass them. */
  private static Key key(Tensor q, Tensor k, Tensor v) {
    int b = q.dim(0), lq = q.dim(1), h = q.dim(2), d = q.dim(3), lk = k.dim(1), dv = v.dim(3);
    int alignment = Math.min(alignment(q), Math.min(alignment(k), alignment(v)));
    return new Key(b, lq, lk, h, d, dv, strides(q), strides(k), strides(v), alignment);
  }

  /** Whether cuDNN can read {@code t} in place: BF16 with unit stride along the head dim. */
  private static boolean passesAsIs(Tensor t) {
    return t.dtype() == DType.BF16 && t.stride(3) == 1;
  }

  private static Strides strides(Tensor t) {
    return passesAsIs(t)
        ? new Strides(t.stride(0), t.stride(1), t.stride(2), t.stride(3))
        : Strides.contiguous(t.dim(1), t.dim(2), t.dim(3));
  }

  /** A fresh allocation is at least 256-byte aligned; a view may start anywhere. */
  private static int alignment(Tensor t) {
    return passesAsIs(t) ? CudnnRuntime.alignment(DeviceTensors.address(t)) : MAX_ALIGNMENT;
  }

  private Tensor bf16(Tensor t) {
    return passesAsIs(t) ? t : tensors.convert(t, DType.BF16);
  }

  // ---- choosing a plan ------------------------------------------------------------------------

  private Choice choose(Key key) {
    // Building a plan may compile and load kernels: this thread needs the context.
    tensors.context().bind();
    List<String> refusals = new ArrayList<>();
    for (Variant variant : Variant.values()) {
      CudnnDescriptors owned = new CudnnDescriptors(cudnn.api());
      try {
        CudnnDescriptor graph =
            variant == Variant.UNIFIED
                ? unifiedGraph(owned, cudnn.handle(), key)
                : compositeGraph(owned, cudnn.handle(), key);
        List<Plan> plans =
            CudnnRuntime.candidates(
                    owned, graph, TUNED_CONFIGS, Long.MAX_VALUE, Set.of(), refusals, variant.label)
                .plans();
        if (!plans.isEmpty()) {
          return choice(key, variant, plans);
        }
      } catch (CudaException e) {
        refusals.add(variant.label + ": " + e.getMessage());
      }
      owned.close();
    }
    return new Choice(
        null, null, "not cuDNN " + cudnn.version() + ": " + String.join("; ", refusals), List.of());
  }

  /** The key's choice, made on first use ({@link #chooseAsItem} for a batch). */
  private Choice choiceFor(Key key, Tensor q, Tensor k, Tensor v, float scale) {
    Choice choice = choices.get(key);
    if (choice == null) {
      choice = key.b() == 1 ? choose(key) : chooseAsItem(key, q, k, v, scale);
      choices.put(key, choice);
    }
    return choice;
  }

  /**
   * A batch's choice: the engine its first item's shape runs (settled first, by timing on that
   * item), checked at the batch's first run to give each item the bits it gets alone ({@link
   * #check}) — a flash-attention engine computes every (item, head) on its own, in an order its
   * configuration fixes, where another engine would sum in another. Where the batch's heuristics do
   * not offer that engine, each item runs alone; where cuDNN does not take the item, neither the
   * batch (the caller's kernel runs both).
   */
  private Choice chooseAsItem(Key key, Tensor q, Tensor k, Tensor v, float scale) {
    Key itemKey = key.item();
    Choice item = choices.get(itemKey);
    if (item == null || !item.untimed().isEmpty()) {
      if (tensors.context().isCapturing()) {
        // Running the item here would record it into the graph: keep the heuristics' first.
        Choice first = item == null ? choose(itemKey) : item;
        item =
            first.plan() == null
                ? first
                : settled(first, first.plan(), "heuristics' first, " + UNTIMED_IN_GRAPH);
        choices.put(itemKey, item);
      } else {
        Tensor o = attention(q.slice(0, 0, 1), k.slice(0, 0, 1), v.slice(0, 0, 1), scale);
        if (o != null) {
          tensors.release(o);
        }
        item = choices.get(itemKey);
      }
    }
    if (item.plan() == null) {
      return new Choice(null, null, item.description(), List.of());
    }
    String engine = item.plan().engine();
    CudnnDescriptors owned = new CudnnDescriptors(cudnn.api());
    try {
      CudnnDescriptor graph =
          item.variant() == Variant.UNIFIED
              ? unifiedGraph(owned, cudnn.handle(), key)
              : compositeGraph(owned, cudnn.handle(), key);
      List<Plan> plans =
          CudnnRuntime.candidates(
                  owned,
                  graph,
                  TUNED_CONFIGS,
                  Long.MAX_VALUE,
                  Set.of(),
                  new ArrayList<>(),
                  item.variant().label)
              .plans();
      for (Plan plan : plans) {
        if (plan.engine().equals(engine)) {
          return new Choice(
              plan,
              item.variant(),
              describe(item.variant(), plan, "its batch-1 item's engine, checked at the first run"),
              List.of(),
              false,
              false);
        }
      }
    } catch (CudaException e) {
      // Below: each item alone.
    }
    owned.close();
    return Choice.perItem(
        "each item alone (engine " + engine + " of its batch-1 item not offered at this batch)");
  }

  /**
   * The choice among a variant's plans: the only one, the one an earlier process timed, or the
   * heuristics' first until the key's first run times them all.
   */
  private Choice choice(Key key, Variant variant, List<Plan> plans) {
    if (plans.size() == 1) {
      return new Choice(
          plans.getFirst(),
          variant,
          describe(variant, plans.getFirst(), "the only candidate"),
          List.of());
    }
    var earlier =
        timedBefore().lookup(stored(key, variant), i -> plans.get(i).engine(), plans.size());
    if (earlier.isPresent()) {
      Plan plan = plans.get(earlier.get());
      String how =
          "fastest of " + plans.size() + " when an earlier process timed them (on-disk choice)";
      return new Choice(plan, variant, describe(variant, plan, how), List.of());
    }
    String how = "heuristics' first of " + plans.size() + ", timed at the first run";
    return new Choice(plans.getFirst(), variant, describe(variant, plans.getFirst(), how), plans);
  }

  /**
   * Times {@code choice}'s plans on this run's buffers (the output is overwritten by the run that
   * follows), records the fastest as the key's choice and returns it. While a CUDA graph records,
   * keeps the heuristics' first instead.
   */
  private Plan tune(
      Key key, Choice choice, Tensor ws, Tensor q, Tensor k, Tensor v, Tensor out, float scale) {
    Plan plan = choice.plan();
    String how;
    if (tensors.context().isCapturing()) {
      how = "heuristics' first of " + choice.untimed().size() + ", " + UNTIMED_IN_GRAPH;
    } else {
      Fastest.Timed<Plan> timed =
          Fastest.of(
              choice.untimed(),
              TIMED_RUNS,
              p -> tensors.context().time(() -> execute(p, ws, q, k, v, out, scale)),
              p -> "engine " + p.engine());
      if (timed == null) {
        how = "heuristics' first; every timed plan failed";
      } else {
        plan = timed.choice();
        timedBefore()
            .record(stored(key, choice.variant()), choice.untimed().indexOf(plan), plan.engine());
        how =
            String.format(
                "fastest of %d timed: %.3f ms [%s]",
                choice.untimed().size(), timed.ms(), String.join(", ", timed.times()));
      }
    }
    choices.put(key, settled(choice, plan, how));
    return plan;
  }

  /** {@code choice} settled on {@code plan}, nothing left to time, described with {@code how}. */
  private Choice settled(Choice choice, Plan plan, String how) {
    return new Choice(plan, choice.variant(), describe(choice.variant(), plan, how), List.of());
  }

  private String describe(Variant variant, Plan plan, String how) {
    return String.format(
        "cuDNN %s %s, engine %s (%s), workspace %d B",
        cudnn.version(), variant.label, plan.engine(), how, plan.workspaceBytes());
  }

  private static String stored(Key key, Variant variant) {
    return key + "/" + variant.label;
  }

  /** The choices earlier processes timed, beside the compiled kernels (read on first use). */
  private TimedChoices timedBefore() {
    if (timedBefore == null) {
      timedBefore =
          TimedChoices.open(
              tensors.kernels().cacheDir(),
              "cudnn-sdpa",
              tensors.context().name(),
              tensors.context().arch(),
              "cudnn" + cudnn.version());
    }
    return timedBefore;
  }

  private void execute(Plan plan, Tensor ws, Tensor q, Tensor k, Tensor v, Tensor o, float scale) {
    try (Arena arena = Arena.ofConfined()) {
      // A pass-by-value tensor's pointer is host memory holding the value.
      MemorySegment scaleValue = arena.allocateFrom(ValueLayout.JAVA_FLOAT, scale);
      cudnn.execute(
          plan,
          ws == null ? 0L : addr(ws),
          new long[] {O, SCALE, Q, K, V},
          new long[] {addr(o), scaleValue.address(), addr(q), addr(k), addr(v)});
    }
  }

  private static long addr(Tensor t) {
    return DeviceTensors.address(t);
  }

  /** Destroys the cached plans (the runtime owns the handle). */
  @Override
  public void close() {
    for (Choice c : choices.values()) {
      if (c.plan() != null) {
        c.plan().owned().close();
      }
    }
    choices.clear();
  }

  // ---- the graphs -----------------------------------------------------------------------------

  /** Q, K, V, O and the scale into cuDNN's single SDPA forward operation. */
  static CudnnDescriptor unifiedGraph(CudnnDescriptors g, long cudnnHandle, Key key) {
    CudnnDescriptor q = io(g, Q, key.b(), key.h(), key.lq(), key.d(), key.q(), key.alignment());
    CudnnDescriptor k = io(g, K, key.b(), key.h(), key.lk(), key.d(), key.k(), key.alignment());
    CudnnDescriptor v = io(g, V, key.b(), key.h(), key.lk(), key.dv(), key.v(), key.alignment());
    CudnnDescriptor o = io(g, O, key.b(), key.h(), key.lq(), key.dv(), key.o(), MAX_ALIGNMENT);
    CudnnDescriptor scale = scale(g);
    CudnnDescriptor sdpa =
        g.create(Cudnn.CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR)
            .descriptors(Cudnn.CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, q)
            .descriptors(Cudnn.CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, k)
            .descriptors(Cudnn.CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, v)
            .descriptors(Cudnn.CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, o)
            .descriptors(Cudnn.CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, scale)
            .finish();
    return CudnnRuntime.operationGraph(g, cudnnHandle, sdpa);
  }

  /**
   * The same attention as separate operations, the pattern cuDNN's fused attention engine matches:
   * S = Q·Kᵀ, S·scale, softmax as exp(S − rowmax) / rowsum, then P·V with P in BF16. Kᵀ is K's
   * descriptor with the last two dims and strides swapped; the intermediates are virtual F32.
   */
  static CudnnDescriptor compositeGraph(CudnnDescriptors g, long cudnnHandle, Key key) {
    long b = key.b(), h = key.h(), lq = key.lq(), lk = key.lk(), d = key.d(), dv = key.dv();
    CudnnDescriptor q = io(g, Q, b, h, lq, d, key.q(), key.alignment());
    Strides ks = key.k();
    CudnnDescriptor kt =
        CudnnRuntime.tensor(
            g,
            K,
            CUDNN_DATA_BFLOAT16,
            new long[] {b, h, d, lk},
            new long[] {ks.b(), ks.h(), ks.d(), ks.l()},
            key.alignment(),
            false);
    CudnnDescriptor v = io(g, V, b, h, lk, dv, key.v(), key.alignment());
    CudnnDescriptor o = io(g, O, b, h, lq, dv, key.o(), MAX_ALIGNMENT);
    long[] scores = {b, h, lq, lk};
    long[] rows = {b, h, lq, 1};
    CudnnDescriptor s = virtual(g, 100, CUDNN_DATA_FLOAT, scores);
    CudnnDescriptor scaled = virtual(g, 101, CUDNN_DATA_FLOAT, scores);
    CudnnDescriptor max = virtual(g, 102, CUDNN_DATA_FLOAT, rows);
    CudnnDescriptor shifted = virtual(g, 103, CUDNN_DATA_FLOAT, scores);
    CudnnDescriptor exp = virtual(g, 104, CUDNN_DATA_FLOAT, scores);
    CudnnDescriptor sum = virtual(g, 105, CUDNN_DATA_FLOAT, rows);
    // cuDNN wants the second matmul's A operand in the I/O type.
    CudnnDescriptor p = virtual(g, 106, CUDNN_DATA_BFLOAT16, scores);
    return CudnnRuntime.operationGraph(
        g,
        cudnnHandle,
        matmul(g, q, kt, s),
        CudnnRuntime.pointwise(g, Cudnn.CUDNN_POINTWISE_MUL, s, scale(g), scaled),
        reduction(g, Cudnn.CUDNN_REDUCE_TENSOR_MAX, scaled, max),
        CudnnRuntime.pointwise(g, Cudnn.CUDNN_POINTWISE_SUB, scaled, max, shifted),
        CudnnRuntime.pointwise(g, Cudnn.CUDNN_POINTWISE_EXP, shifted, null, exp),
        reduction(g, Cudnn.CUDNN_REDUCE_TENSOR_ADD, exp, sum),
        CudnnRuntime.pointwise(g, Cudnn.CUDNN_POINTWISE_DIV, exp, sum, p),
        matmul(g, p, v, o));
  }

  /** A BF16 graph input or output with dims [b, h, l, d] and our strides. */
  private static CudnnDescriptor io(
      CudnnDescriptors g, long uid, long b, long h, long l, long d, Strides s, int alignment) {
    return CudnnRuntime.tensor(
        g, uid, CUDNN_DATA_BFLOAT16, new long[] {b, h, l, d}, s.bhld(), alignment, false);
  }

  /** An intermediate that never reaches memory, contiguous in [b, h, lq, n] order. */
  private static CudnnDescriptor virtual(CudnnDescriptors g, long uid, int dataType, long[] dims) {
    long[] strides = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
    return CudnnRuntime.tensor(g, uid, dataType, dims, strides, MAX_ALIGNMENT, true);
  }

  /** The F32 scale as a [1, 1, 1, 1] pass-by-value tensor. */
  private static CudnnDescriptor scale(CudnnDescriptors g) {
    return g.create(Cudnn.CUDNN_BACKEND_TENSOR_DESCRIPTOR)
        .dataType(Cudnn.CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_DATA_FLOAT)
        .int64s(Cudnn.CUDNN_ATTR_TENSOR_DIMENSIONS, 1, 1, 1, 1)
        .int64s(Cudnn.CUDNN_ATTR_TENSOR_STRIDES, 1, 1, 1, 1)
        .int64s(Cudnn.CUDNN_ATTR_TENSOR_UNIQUE_ID, SCALE)
        .int64s(Cudnn.CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, MAX_ALIGNMENT)
        .bool(Cudnn.CUDNN_ATTR_TENSOR_IS_BY_VALUE, true)
        .finish();
  }

  private static CudnnDescriptor matmul(
      CudnnDescriptors g, CudnnDescriptor a, CudnnDescriptor b, CudnnDescriptor c) {
    CudnnDescriptor desc =
        g.create(Cudnn.CUDNN_BACKEND_MATMUL_DESCRIPTOR)
            .dataType(Cudnn.CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_DATA_FLOAT)
            .finish();
    return g.create(Cudnn.CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR)
        .descriptors(Cudnn.CUDNN_ATTR_OPERATION_MATMUL_ADESC, a)
        .descriptors(Cudnn.CUDNN_ATTR_OPERATION_MATMUL_BDESC, b)
        .descriptors(Cudnn.CUDNN_ATTR_OPERATION_MATMUL_CDESC, c)
        .descriptors(Cudnn.CUDNN_ATTR_OPERATION_MATMUL_DESC, desc)
        .finish();
  }

  /** {@code y = reduce(x)} over the dims where y has size 1. */
  private static CudnnDescriptor reduction(
      CudnnDescriptors g, int operator, CudnnDescriptor x, CudnnDescriptor y) {
    CudnnDescriptor desc =
        g.create(Cudnn.CUDNN_BACKEND_REDUCTION_DESCRIPTOR)
            .dataType(Cudnn.CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_DATA_FLOAT)
            .enumValue(
                Cudnn.CUDNN_ATTR_REDUCTION_OPERATOR,
                Cudnn.CUDNN_TYPE_REDUCTION_OPERATOR_TYPE,
                operator)
            .finish();
    return g.create(Cudnn.CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR)
        .descriptors(Cudnn.CUDNN_ATTR_OPERATION_REDUCTION_DESC, desc)
        .descriptors(Cudnn.CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x)
        .descriptors(Cudnn.CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y)
        .finish();
  }
}

package dev.stepweave.tensor;

import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The compute SPI. Model code calls only these operations, so a CUDA backend plugs in without model
 * code changing. Every operation returns a new tensor on {@link #device()} (no in-place mutation of
 * inputs) and accepts any strided view as input; implementations copy to contiguous where they need
 * to. Floating-point compute is F32 on the CPU; a device backend may store BF16 but keeps the same
 * semantics.
 *
 * <p>Shapes use PyTorch conventions so a reference implementation reads across directly: linear
 * weights are {@code [out, in]}, convolutions are channels-first {@code [B, C, T, H, W]}.
 */
public interface Backend {

  Device device();

  /** A short name for logs ("cpu", "cuda:0"). */
  default String name() {
    return device().toString();
  }

  // ---- memory ---------------------------------------------------------------------------------

  /** A zero-filled tensor on this device. */
  Tensor zeros(DType dtype, int... shape);

  /** Copies a tensor (from any device this backend can read) onto this device, as {@code dtype}. */
  Tensor upload(Tensor t, DType dtype);

  /**
   * Tensors of one shape copied onto this device stacked along a new first dimension, {@code [G,
   * ...]}, as {@code dtype}: the {@link #concat} of their uploads, which a device backend writes
   * straight into one allocation (a component's weight pool never frees, so the separate uploads
   * must not be made).
   */
  default Tensor uploadStacked(List<Tensor> parts, DType dtype) {
    List<Tensor> uploaded = new java.util.ArrayList<>(parts.size());
    for (Tensor p : parts) {
      uploaded.add(upload(p, dtype).unsqueeze(0));
    }
    return concat(uploaded, 0);
  }

  /**
   * The device's rates, measured once (a device backend times a GEMM and a copy on first call): the
   * cost model's seed. Empty where no measurement is meaningful (the CPU: its engine keeps the
   * configured rates).
   */
  default Optional<DeviceRates> deviceRates() {
    return Optional.empty();
  }

  /**
   * Returns once everything issued on this backend has finished (a device backend runs
   * asynchronously; the engine waits here to time a call). The CPU computes synchronously: nothing.
   */
  default void synchronize() {}

  /**
   * Gives cached device memory that no live tensor uses back to the device when the backend holds
   * more of it than its policy keeps: for the end of a pass whose peak is far above what follows (a
   * VAE decode). The CPU's memory is the JVM's: nothing.
   */
  default void trim() {}

  /** Copies a tensor of this device into a contiguous F32 CPU tensor. */
  Tensor download(Tensor t);

  /**
   * Copies a tensor of this device into {@code into}, a contiguous F32 CPU tensor of its shape that
   * the caller made ahead. Fresh host memory costs a page fault per page when first written (a 400
   * MB video: a fifth of a second to a second, by the host), which a caller can take off its
   * critical path by making the tensor early on another thread. The default downloads and copies.
   */
  default void downloadInto(Tensor t, Tensor into) {
    requireDownloadTarget(t, into);
    Tensor f32 = download(t);
    java.lang.foreign.MemorySegment.copy(f32.segment(), 0, into.segment(), 0, into.byteSize());
  }

  /** Throws unless {@code into} can take {@link #downloadInto} of {@code t}. */
  static void requireDownloadTarget(Tensor t, Tensor into) {
    if (into.device().kind() != Device.Kind.CPU
        || into.dtype() != DType.F32
        || !into.isContiguous()
        || !Arrays.equals(into.shape(), t.shape())) {
      throw new IllegalArgumentException(
          "downloadInto needs a contiguous F32 CPU tensor of shape "
              + Arrays.toString(t.shape())
              + ", got "
              + into);
    }
  }

  /**
   * A contiguous CPU copy of {@code t} in its own dtype, queued behind the work issued so far: the
   * supplier's tensor may be read once {@link #synchronize} next returns, not before (the same
   * tensor each time). A device backend copies on its stream and makes the host tensor off the
   * caller's thread, so a step's state goes to the host while the next step computes; the default
   * copies at once.
   */
  default java.util.function.Supplier<Tensor> downloadQueued(Tensor t) {
    Tensor host;
    if (t.device().kind() == Device.Kind.CPU) {
      host = t.toHost(t.dtype());
    } else {
      Tensor f32 = download(t);
      host = t.dtype().isFloating() && t.dtype() != f32.dtype() ? f32.toHost(t.dtype()) : f32;
    }
    return () -> host;
  }

  /**
   * {@code t} as F32 into the contiguous F32 CPU tensor of its shape that {@code into} supplies,
   * queued like {@link #downloadQueued}: the supplier gives that tensor, readable once {@link
   * #synchronize} next returns. {@code into} is asked when the copy lands — on another thread for a
   * device backend, and it may wait there (a tensor still being made) — so a device→host copy of a
   * result's part can go straight into the whole result's host memory. The default copies at once.
   */
  default java.util.function.Supplier<Tensor> downloadQueuedInto(
      Tensor t, java.util.function.Supplier<Tensor> into) {
    Tensor target = into.get();
    downloadInto(t, target);
    return () -> target;
  }

  /** A contiguous copy (or {@code t} itself when already contiguous). */
  Tensor contiguous(Tensor t);

  // ---- component memory -----------------------------------------------------------------------
  // A device backend may keep each model component's weights in a pool of its own, so that the
  // component's memory can be accounted exactly and released while it is not needed. The CPU keeps
  // weights in host memory (often the mapped checkpoint itself) and has nothing to pool: there the
  // defaults run the load, release nothing and report nothing.

  /**
   * Runs {@code load} and returns its result; a device backend places the memory of every tensor
   * the load makes in the pool of {@code component} (made on first use, grown as needed), where it
   * stays until {@link #releaseComponent}: such tensors are ordinary device tensors, but their
   * memory is never recycled while the pool lives. Loading into an existing component adds to its
   * pool. Tags are the caller's and should be unique per loaded model (one backend may hold several
   * models).
   */
  default <T> T loadingComponent(String component, Supplier<T> load) {
    return load.get();
  }

  /**
   * Parks {@code component}'s weights in host memory and releases its device memory; the tensors
   * keep their addresses, and must not be used until {@link #wakeComponent}. Asleep already:
   * nothing.
   *
   * @throws IllegalArgumentException on a device backend that has no such component pool
   */
  default void sleepComponent(String component) {}

  /**
   * Gives {@code component} device memory again at the same addresses and restores its weights.
   * Awake already: nothing.
   *
   * @throws IllegalArgumentException on a device backend that has no such component pool
   */
  default void wakeComponent(String component) {}

  /**
   * Frees {@code component}'s pool: every tensor loaded into it becomes invalid. Unknown: nothing
   * (so a failed load can release what it may have made).
   */
  default void releaseComponent(String component) {}

  /**
   * The device's memory and what this backend holds of it now, component pools included; empty on a
   * backend without device memory (the CPU).
   */
  default Optional<DeviceMemory> deviceMemory() {
    return Optional.empty();
  }

  // ---- recorded work --------------------------------------------------------------------------

  /**
   * {@code body.apply(inputs)}, which a device backend may record once per {@code key} and replay
   * (CUDA graphs): the first call for a key runs the body and records it; later calls copy the new
   * inputs into the recorded ones and replay the recording. The body must issue device work only
   * (no uploads, downloads or waits: a recording backend refuses them), and read nothing but its
   * inputs and tensors that outlive the recording (weights, constants made at load). The result is
   * a fresh tensor the caller owns. This default checks the key and runs the body.
   *
   * @param key all that decides the work the body issues; its shape must be {@link
   *     GraphKey#signature} of {@code inputs}
   * @throws IllegalArgumentException when the key's shape does not describe {@code inputs}
   */
  default Tensor replayable(
      GraphKey key, List<Tensor> inputs, Function<List<Tensor>, Tensor> body) {
    key.requireDescribes(inputs);
    return body.apply(inputs);
  }

  // ---- linear algebra -------------------------------------------------------------------------

  /**
   * {@code x @ w^T + bias} over the last dimension: x {@code [..., K]}, w {@code [N, K]}, bias
   * {@code [N]} or null, result {@code [..., N]}. Batch-invariant: a row's result depends only on
   * that row, never on how many items of an x of rank 3 or more ({@code [items, rows, K]}; a 2-D x
   * is one item) are computed together — the CPU computes every row alike; a device backend runs
   * the algorithm of one item's rows for any number of items (docs/cuda.md, "Batch invariance").
   */
  Tensor linear(Tensor x, Tensor w, Tensor bias);

  /**
   * {@code y} plus each batch row's own low-rank updates: row {@code b} of the result is {@code
   * y[b] + Σⱼ scaleⱼ · (x[b] · downⱼᵀ) · upⱼᵀ} over {@code rows.get(b)} in order, so one call can
   * mix rows with different adapters (an empty list leaves its row as it is). {@code y} is
   * consumed: a backend may accumulate into it, and the caller must not read it again.
   *
   * <p>Batch-invariant like {@link #linear}: a row's result depends only on that row and its own
   * updates. This default computes each run of consecutive rows sharing their updates (a batch of
   * one adapter is one run) together, update by update, with {@link #linear} — whose rows do not
   * depend on how many are computed together, so each row gets the bits it gets alone, in two
   * products per update instead of two per row and update (what a training step records, too);
   * device backends batch every row into a few launches.
   *
   * @param y {@code [B, L, out]} (the base layer's output)
   * @param x {@code [B, L, in]} (the base layer's input)
   * @param rows {@code B} lists of updates whose {@code in}/{@code out} match
   */
  default Tensor addLowRank(Tensor y, Tensor x, List<List<LowRank>> rows) {
    OpShapes.lowRank(y, x, rows);
    if (rows.stream().allMatch(List::isEmpty)) {
      return y;
    }
    List<Tensor> out = new java.util.ArrayList<>();
    for (int start = 0, end; start < rows.size(); start = end) {
      List<LowRank> updates = rows.get(start);
      end = start + 1;
      while (end < rows.size() && rows.get(end).equals(updates)) {
        end++;
      }
      Tensor run = y.slice(0, start, end);
      Tensor xs = x.slice(0, start, end);
      for (LowRank u : updates) {
        run = addLowRankUpdate(run, xs, u);
      }
      out.add(run);
    }
    // One run has updates (all-empty rows returned above), so its sum is already a new tensor.
    return out.size() == 1 ? out.getFirst() : concat(out, 0);
  }

  /**
   * One update of {@link #addLowRank}'s default, for rows that all take it: {@code y +
   * s·(x·Dᵀ)·Uᵀ}, as {@code add(y, linear(affine(linear(x, D), s), U))} (a training recording makes
   * it one node).
   */
  default Tensor addLowRankUpdate(Tensor y, Tensor x, LowRank u) {
    Tensor inner = affine(linear(x, u.down(), null), u.scale(), 0f);
    return add(y, linear(inner, u.up(), null));
  }

  /**
   * {@code linear(x, w, bias)} with each batch row's low-rank updates added ({@link #addLowRank}),
   * then GELU (tanh approximation) when {@code geluTanh}: an adapted layer in one call, so a device
   * backend may fold the updates into the weight it multiplies with (per group of rows sharing
   * updates) rather than pass over the activations again. This default is that composition.
   *
   * @param x {@code [B, L, in]}
   * @param w {@code [out, in]}
   * @param bias {@code [out]} or null
   * @param rows {@code B} lists of updates, as for {@link #addLowRank}
   */
  default Tensor linearLowRank(
      Tensor x, Tensor w, Tensor bias, boolean geluTanh, List<List<LowRank>> rows) {
    Tensor y = addLowRank(linear(x, w, bias), x, rows);
    return geluTanh ? gelu(y, true) : y;
  }

  /**
   * Several linear layers of one input: {@code linear(x, w[i], bias[i])} for each {@code i}, in
   * order — a block's query, key and value projections in one call, so a device backend runs them
   * as one batched GEMM instead of three narrower ones. Each result equals that {@link #linear}
   * (bit for bit on the CPU). This default is that loop.
   *
   * @param x {@code [..., K]}
   * @param w {@code [G, N, K]}: the layers' weights, stacked
   * @param bias {@code [G, N]} or null
   * @return G tensors {@code [..., N]}
   */
  default List<Tensor> linearStacked(Tensor x, Tensor w, Tensor bias) {
    OpShapes.linearStacked(x, w, bias);
    List<Tensor> out = new java.util.ArrayList<>(w.dim(0));
    for (int i = 0; i < w.dim(0); i++) {
      out.add(linear(x, w.select(0, i), bias == null ? null : bias.select(0, i)));
    }
    return out;
  }

  /** Batched matrix product {@code [..., M, K] @ [..., K, N] -> [..., M, N]} (broadcast batch). */
  Tensor matmul(Tensor a, Tensor b);

  /**
   * Scaled dot-product attention with online softmax (never materialises an Lq×Lk matrix).
   *
   * @param q {@code [B, Lq, H, D]}
   * @param k {@code [B, Lk, H, D]}
   * @param v {@code [B, Lk, H, Dv]}
   * @param bias additive logits bias broadcastable to {@code [B, H, Lq, Lk]} (relative position
   *     bias, padding masks as large negative values), or null
   * @param scale multiplier of {@code q·k} (1/sqrt(D) for standard attention, 1 for T5)
   * @return {@code [B, Lq, H, Dv]}
   */
  Tensor attention(Tensor q, Tensor k, Tensor v, Tensor bias, float scale);

  /**
   * The backward of {@link #attention}: given {@code out = attention(q, k, v, bias, scale)} and the
   * gradient of a loss with respect to {@code out} ({@code forward}), the gradients with respect to
   * q, k and v (each its input's shape) and, when {@code biasGradient}, to the logits bias
   * broadcast to {@code [B, H, Lq, Lk]}. The training plane's rule (it records the forward and
   * calls this in the backward); like the forward it never forms Lq×Lk scores, except the bias
   * gradient asked for.
   *
   * @throws UnsupportedOperationException on a backend without it
   */
  default AttentionGradients attentionBackward(
      AttentionForward forward, Tensor gradOut, boolean biasGradient) {
    throw new UnsupportedOperationException(name() + " has no attention backward");
  }

  /**
   * One {@link #attention} as its backward reads it: the inputs, the scale and {@code out =
   * attention(q, k, v, bias, scale)}; the shapes are checked here.
   */
  record AttentionForward(Tensor q, Tensor k, Tensor v, Tensor bias, float scale, Tensor out) {
    public AttentionForward {
      outputShaped(out, OpShapes.attention(q, k, v));
    }

    /** {@code gradOut}, checked to have the output's shape. */
    public Tensor gradientOfOutput(Tensor gradOut) {
      return outputShaped(gradOut, out.shape());
    }

    private static Tensor outputShaped(Tensor t, int[] shape) {
      if (!Arrays.equals(t.shape(), shape)) {
        throw new IllegalArgumentException(
            "attention backward: output and its gradient must be "
                + Arrays.toString(shape)
                + ", got "
                + t);
      }
      return t;
    }
  }

  /** What {@link #attentionBackward} returns; {@code bias} is null unless it was asked for. */
  record AttentionGradients(Tensor q, Tensor k, Tensor v, Tensor bias) {}

  /**
   * 3-D convolution, channels first: x {@code [B, C, T, H, W]}, w {@code [O, C, kt, kh, kw]}, bias
   * {@code [O]} or null. Zero padding {@code padding = {pt, ph, pw}} on both sides of each axis
   * (causal padding is an explicit {@link #pad} by the caller).
   */
  Tensor conv3d(Tensor x, Tensor w, Tensor bias, int[] stride, int[] padding);

  /**
   * {@link #conv3d} with its result in {@code out}, whatever x's dtype. A device backend runs a
   * BF16 x on the tensor cores (its filter rounded to BF16, F32 accumulation) and writes the
   * accumulators straight in {@code out}: with {@code out} F32 the products are the only rounding,
   * so a model may keep its residual stream in F32 and still convolve at BF16 speed. The default
   * converts conv3d's result.
   */
  default Tensor conv3d(Tensor x, Tensor w, Tensor bias, int[] stride, int[] padding, DType out) {
    Tensor y = conv3d(x, w, bias, stride, padding);
    return y.dtype() == out ? y : upload(y, out);
  }

  // ---- normalisation --------------------------------------------------------------------------

  /** LayerNorm over the last dimension; weight and bias may be null (no affine). */
  Tensor layerNorm(Tensor x, Tensor weight, Tensor bias, float eps);

  /**
   * RMSNorm over the last dimension: {@code x / sqrt(mean(x²) + eps) * weight} (weight may be
   * null). This is also T5's layer norm.
   */
  Tensor rmsNorm(Tensor x, Tensor weight, float eps);

  /**
   * The gradients of a norm over the last dimension ({@link #layerNormBackward}, {@link
   * #rmsNormBackward}), F32, each null where it was not asked for (or the norm has no such
   * parameter): the input's (x's shape) and the weight's and bias's ({@code [n]}, sums over the
   * rows).
   */
  record NormGradients(Tensor input, Tensor weight, Tensor bias) {}

  /**
   * {@link #layerNorm}'s backward from its output's gradient {@code g} (F32, x's shape), the row
   * statistics recomputed from {@code x}: with x̂ = (x − μ)·r and ĝ = g·w, {@code dx = r·(ĝ −
   * mean(ĝ) − x̂·mean(ĝ·x̂))}, {@code dw = Σ g·x̂}, {@code db = Σ g} (sums over the rows). This
   * default composes the SPI's operations (the host's bits); a device computes the row terms in one
   * pass.
   */
  default NormGradients layerNormBackward(
      Tensor g,
      Tensor x,
      Tensor weight,
      Tensor bias,
      float eps,
      boolean wantInput,
      boolean wantWeight,
      boolean wantBias) {
    int n = x.dim(-1);
    Tensor centred = sub(x, rowMeans(x, n));
    Tensor r = rsqrt(rowMeans(unary(centred, UnaryOp.SQUARE), n), eps);
    Tensor xhat = mul(centred, r);
    Tensor dx = null;
    if (wantInput) {
      Tensor gh = weight == null ? g : mul(g, weight);
      Tensor inner = sub(sub(gh, rowMeans(gh, n)), mul(xhat, rowMeans(mul(gh, xhat), n)));
      dx = mul(inner, r);
    }
    return new NormGradients(
        dx,
        weight != null && wantWeight ? columnSums(mul(g, xhat), n) : null,
        bias != null && wantBias ? columnSums(g, n) : null);
  }

  /**
   * {@link #rmsNorm}'s backward from its output's gradient {@code g} (F32, x's shape): with r =
   * 1/√(mean(x²) + eps) and ĝ = g·w, {@code dx = r·ĝ − x·r³·mean(ĝ·x)}, {@code dw = Σ g·x·r}. This
   * default composes the SPI's operations (the host's bits); a device computes the row terms in one
   * pass.
   */
  default NormGradients rmsNormBackward(
      Tensor g, Tensor x, Tensor weight, float eps, boolean wantInput, boolean wantWeight) {
    int n = x.dim(-1);
    Tensor r = rsqrt(rowMeans(unary(x, UnaryOp.SQUARE), n), eps);
    Tensor dx = null;
    if (wantInput) {
      Tensor gh = weight == null ? g : mul(g, weight);
      Tensor cubed = mul(unary(r, UnaryOp.SQUARE), r);
      Tensor along = mul(x, mul(cubed, rowMeans(mul(gh, x), n)));
      dx = sub(mul(gh, r), along);
    }
    return new NormGradients(
        dx, weight != null && wantWeight ? columnSums(mul(g, mul(x, r)), n) : null, null);
  }

  /** The mean of each row of {@code t} (last dimension {@code n}), as {@code [..., 1]}. */
  private Tensor rowMeans(Tensor t, int n) {
    return affine(sumLastDim(t), 1f / n, 0f);
  }

  /** {@code 1/√(v + eps)}. */
  private Tensor rsqrt(Tensor v, float eps) {
    return unary(affine(v, 1f, eps), UnaryOp.RSQRT);
  }

  /** The sum over every row of {@code t} (last dimension {@code n}): {@code [n]}. */
  private Tensor columnSums(Tensor t, int n) {
    Tensor dense = t.isContiguous() ? t : contiguous(t);
    return sumMiddle(dense.reshape(1, (int) (t.numel() / n), n)).reshape(n);
  }

  /**
   * {@code x / max(‖x‖₂, eps)} along {@code dim} (PyTorch's {@code F.normalize}), used by the Wan
   * VAE's channel RMS norm.
   */
  Tensor l2Normalize(Tensor x, int dim, float eps);

  /** Softmax over the last dimension. */
  Tensor softmax(Tensor x);

  // ---- activations and elementwise ------------------------------------------------------------

  /** GELU, exact (erf) or the tanh approximation. */
  Tensor gelu(Tensor x, boolean tanhApproximation);

  /**
   * The tanh GELU's backward, F32 of x's shape, from its output's gradient {@code g} (F32): with
   * {@code t = tanh(k·(x + c·x³))} (k = √(2/π), c = 0.044715), {@code g·(½(1 + t) + x·(1 − t²)·(½k
   * + 3/2·c·k·x²))}. This default composes the SPI's elementwise operations (the host's bits); a
   * device computes it in one pass.
   */
  default Tensor geluTanhBackward(Tensor g, Tensor x) {
    float k = (float) Math.sqrt(2 / Math.PI);
    float c = 0.044715f;
    Tensor x2 = unary(x, UnaryOp.SQUARE);
    Tensor t = unary(affine(mul(x, affine(x2, c, 1f)), k, 0f), UnaryOp.TANH);
    Tensor slope =
        mul(mul(x, affine(unary(t, UnaryOp.SQUARE), -1f, 1f)), affine(x2, 1.5f * c * k, 0.5f * k));
    return mul(g, add(affine(t, 0.5f, 0.5f), slope));
  }

  Tensor silu(Tensor x);

  Tensor unary(Tensor x, UnaryOp op);

  /** Elementwise binary op with NumPy broadcasting. */
  Tensor binary(Tensor a, Tensor b, BinaryOp op);

  default Tensor add(Tensor a, Tensor b) {
    return binary(a, b, BinaryOp.ADD);
  }

  default Tensor sub(Tensor a, Tensor b) {
    return binary(a, b, BinaryOp.SUB);
  }

  default Tensor mul(Tensor a, Tensor b) {
    return binary(a, b, BinaryOp.MUL);
  }

  default Tensor div(Tensor a, Tensor b) {
    return binary(a, b, BinaryOp.DIV);
  }

  /** {@code x * scale + shift} elementwise with scalars. */
  Tensor affine(Tensor x, float scale, float shift);

  /** Clamps every element into {@code [min, max]}. */
  Tensor clamp(Tensor x, float min, float max);

  /**
   * Rotary embedding over interleaved pairs {@code (x[2i], x[2i+1])} of the last dimension: {@code
   * (a, b) -> (a·cos − b·sin, a·sin + b·cos)}.
   *
   * @param x {@code [B, L, H, D]}
   * @param cos {@code [L, D/2]}
   * @param sin {@code [L, D/2]}
   */
  Tensor rope(Tensor x, Tensor cos, Tensor sin);

  // ---- fused operations ----------------------------------------------------------------------
  // Each is defined by the composition of the operations above that its default runs; a device
  // backend overrides it with one kernel. Results equal the composition up to the backend's
  // rounding of activations (see activationDType): bit-identical on the CPU.

  /**
   * {@code layerNorm(x) · (1 + scale) + shift} without affine weights (adaptive LayerNorm): x
   * {@code [..., D]}, shift and scale broadcastable to x (per-sample vectors {@code [B, 1, D]}). On
   * a backend with BF16 activations the result has x's dtype (the statistics and the modulation are
   * computed in F32).
   */
  default Tensor modulatedLayerNorm(Tensor x, Tensor shift, Tensor scale, float eps) {
    return inDTypeOf(x, add(mul(layerNorm(x, null, null, eps), affine(scale, 1f, 1f)), shift));
  }

  /**
   * {@code result} in x's dtype: a composition whose F32 modulation or gate promoted a BF16
   * activation gives it back in BF16, as the fused kernel it stands for does (the CPU's F32 results
   * are themselves).
   */
  private Tensor inDTypeOf(Tensor x, Tensor result) {
    return result.dtype() == x.dtype() ? result : upload(result, x.dtype());
  }

  /**
   * Queries or keys of rotary attention: {@code rope(rmsNorm(x, weight) split into heads, cos,
   * sin)}. x {@code [B, L, H·D]} is normalised over its whole last dimension (all heads together,
   * as Wan's "RMS norm across heads"), then viewed as {@code [B, L, heads, D]} and rotated with the
   * {@code [L, D/2]} tables. On a backend with BF16 activations the result has x's dtype (computed
   * in F32 throughout, so without the composition's intermediate rounding).
   */
  default Tensor rmsNormRope(
      Tensor x, Tensor weight, float eps, int heads, Tensor cos, Tensor sin) {
    Tensor normed = rmsNorm(x, weight, eps);
    return rope(normed.reshape(normed.dim(0), normed.dim(1), heads, -1), cos, sin);
  }

  /**
   * {@code x + y · gate}: a gated residual update. x and y have one shape, gate broadcasts to it.
   * On a backend with BF16 activations the result has x's dtype (computed in F32).
   */
  default Tensor gatedResidual(Tensor x, Tensor y, Tensor gate) {
    return inDTypeOf(x, add(x, mul(y, gate)));
  }

  /**
   * A residual update and the LayerNorm that reads its result: {@code r = gatedResidual(x, y,
   * gate)} ({@code add(x, y)} when gate is null), then {@code layerNorm(r, weight, bias, eps)} —
   * one pass over the stream instead of two. Results equal that composition (bit for bit on the CPU
   * and, on a device, with its unfused kernels).
   */
  default ResidualNorm residualLayerNorm(
      Tensor x, Tensor y, Tensor gate, Tensor weight, Tensor bias, float eps) {
    Tensor r = gate == null ? add(x, y) : gatedResidual(x, y, gate);
    return new ResidualNorm(r, layerNorm(r, weight, bias, eps));
  }

  /**
   * Like {@link #residualLayerNorm}, with the adaptive norm that reads the result: {@code r =
   * gatedResidual(x, y, gate)} (or {@code add(x, y)}), then {@code modulatedLayerNorm(r, shift,
   * scale, eps)}.
   */
  default ResidualNorm residualModulatedLayerNorm(
      Tensor x, Tensor y, Tensor gate, Tensor shift, Tensor scale, float eps) {
    Tensor r = gate == null ? add(x, y) : gatedResidual(x, y, gate);
    return new ResidualNorm(r, modulatedLayerNorm(r, shift, scale, eps));
  }

  /**
   * {@code l2Normalize(x, 1, eps) · gamma}, then SiLU when {@code silu}: RMS norm across the
   * channels of {@code x [B, C, …]} with {@code gamma [C, 1, …, 1]} (the Wan VAE's norm, its scale
   * √C folded into gamma), written in {@code out} (computed in F32 and rounded once: an F32 stream
   * may be normalised straight into the BF16 input of the convolution that reads it).
   */
  default Tensor channelNorm(Tensor x, Tensor gamma, float eps, boolean silu, DType out) {
    Tensor y = mul(l2Normalize(x, 1, eps), gamma);
    Tensor activated = silu ? silu(y) : y;
    return activated.dtype() == out ? activated : upload(activated, out);
  }

  /**
   * {@code concat([past, channelNorm(x, gamma, eps, silu, out)], 2)}: the normalised frames of
   * {@code x [B, C, T, …]} after the frames {@code past [B, C, P, …]} (what a causal convolution
   * remembers of its input, or zeros), written once into one tensor of {@code out} instead of
   * normalised and then copied into a concatenation; {@code past} may be of another floating dtype
   * and is converted.
   */
  default Tensor channelNormAfter(
      Tensor past, Tensor x, Tensor gamma, float eps, boolean silu, DType out) {
    Tensor normed = channelNorm(x, gamma, eps, silu, out);
    Tensor before = past.dtype() == out ? past : upload(past, out);
    return concat(List.of(before, normed), 2);
  }

  /** {@code gelu(linear(x, w, bias), tanh approximation)}: a linear layer with GELU epilogue. */
  default Tensor linearGeluTanh(Tensor x, Tensor w, Tensor bias) {
    return gelu(linear(x, w, bias), true);
  }

  // ---- activation precision and lifetimes ------------------------------------------------------

  /**
   * The dtype a model should hold its activations in on this backend: F32 (the CPU, a device
   * backend's exact mode) or BF16 (a device backend's performance mode). Operations keep an
   * activation's dtype, so a model converts its residual stream once, with {@link #upload}, and
   * everything computed from it stays in that dtype; inputs made in F32 (timestep embeddings,
   * modulation vectors) stay F32.
   */
  default DType activationDType() {
    return DType.F32;
  }

  /**
   * Runs {@code body} and returns its result, declaring that every tensor the body allocates other
   * than the result is dead when it returns: a device backend then reuses their memory at once
   * instead of when the garbage collector finds them. Tensors made before the call are never
   * released by it. So the body must not keep a tensor it made anywhere but in its result (a tap
   * sink copies what it keeps during its call). Calls nest. The default just runs the body.
   */
  default Tensor scoped(Supplier<Tensor> body) {
    return body.get();
  }

  /**
   * A {@link StepMemory} for one piece of per-request state that lives across steps and is replaced
   * part by part (a decode's causal caches and finished frames). The default runs each step and
   * releases nothing.
   */
  default StepMemory stepMemory() {
    return (body, survivors) -> body.run();
  }

  /**
   * The device memory of state that outlives the steps that update it, steps which may interleave
   * with other work (so no scope can stay open across them). Made by {@link #stepMemory}, kept by
   * the state, and used for every step that updates it.
   */
  @FunctionalInterface
  interface StepMemory {
    /**
     * Runs {@code body}, which updates the state, then declares dead every tensor allocated during
     * it or kept by an earlier step of this memory, except those {@code survivors} lists once the
     * body has returned (views count by their storage): a device backend reuses their memory at
     * once. The survivors are kept for the next step, so one the state drops later dies then; no
     * caller may use a tensor the state no longer holds (an earlier step's output included) after a
     * step. Tensors made outside this memory's steps are never released by it. A body that throws
     * releases nothing.
     */
    void step(Runnable body, Supplier<? extends Collection<Tensor>> survivors);

    /**
     * Declares {@code dead} dead now, during a step: a device backend may hand its memory to what
     * the rest of the step allocates. The caller promises that nothing issued later reads it or any
     * tensor sharing its storage (the state holds none; its storage counts as a whole). The default
     * releases nothing.
     */
    default void releaseNow(Tensor dead) {}

    /**
     * Ends this memory: what its steps kept becomes ordinary memory of the step or scope the caller
     * is in now, released with that one's work (or, outside any, when the garbage collector finds
     * it). For state whose last tensors are handed on to an enclosing step (a backward's gradients,
     * which an optimiser's step reads and then drops). The default does nothing.
     */
    default void end() {}
  }

  /**
   * Runs steps {@code from} to {@code to - 1} one after another on {@code x}: returns {@code
   * step(to-1, … step(from + 1, step(from, x)))}. Like {@link #scoped} for each step, and also
   * declares that each step's result is dead once the next step has returned, so a device backend
   * holds one block's activations at a time. {@code x} and the final result are never released; a
   * step must keep no tensor it made except its result. The default just runs the steps.
   */
  default Tensor chain(Tensor x, int from, int to, ChainStep step) {
    return chain(x, from, to, step, List::of);
  }

  /**
   * Like {@link #chain}, for steps that also store tensors they make in state that outlives the
   * chain (a causal cache's newest frames): {@code alsoKept}, asked after each step, lists them
   * (views count by their storage), and they survive with the step's result. The default just runs
   * the steps.
   */
  default Tensor chain(
      Tensor x, int from, int to, ChainStep step, Supplier<? extends Collection<Tensor>> alsoKept) {
    Tensor h = x;
    for (int i = from; i < to; i++) {
      h = step.apply(i, h);
    }
    return h;
  }

  /** Step {@code index} of a {@link #chain}, applied to the previous step's result. */
  @FunctionalInterface
  interface ChainStep {
    Tensor apply(int index, Tensor x);
  }

  // ---- shape ops ------------------------------------------------------------------------------

  Tensor concat(List<Tensor> parts, int dim);

  /**
   * Constant padding; {@code pads} holds (before, after) pairs for the last dimensions, last
   * dimension first, as {@code torch.nn.functional.pad}.
   */
  Tensor pad(Tensor x, int[] pads, float value);

  /** Nearest-neighbour upsampling of the last two dimensions by integer factors. */
  Tensor upsampleNearest2d(Tensor x, int scaleH, int scaleW);

  /** Rows of {@code table [V, D]} picked by integer {@code ids [...]}: result {@code [..., D]}. */
  Tensor embedding(Tensor table, Tensor ids);

  /** Sum over the last dimension, keeping it with size 1. */
  Tensor sumLastDim(Tensor x);

  /**
   * {@code x [outer, rows, inner]} summed over its middle dimension, {@code [outer, inner]}: a
   * bias's gradient (the rows of a linear's output gradient), a broadcast operand's (the tokens of
   * a modulation's). This default moves the rows last (a transposed copy) and sums them with {@link
   * #sumLastDim}, the order every CPU run has summed in; a device may multiply by a row of ones
   * instead, one pass in its GEMM.
   */
  default Tensor sumMiddle(Tensor x) {
    if (x.rank() != 3) {
      throw new IllegalArgumentException("sumMiddle takes [outer, rows, inner], not " + x);
    }
    return sumLastDim(contiguous(x.permute(0, 2, 1))).reshape(x.dim(0), x.dim(2));
  }

  /**
   * Adds {@code value} (the shape of {@code target}, any strides) into the elements of {@code
   * target}, an F32 view of a buffer this backend made: one of the SPI's two in-place operations,
   * for the training plane, which accumulates gradients per storage through the views that read it.
   * The view's elements must be distinct (no stride-0 dimension spanning more than one), so the
   * adds never race; the caller sums a broadcast first.
   *
   * @throws IllegalArgumentException for a shape mismatch, a non-F32 target or a broadcast target
   */
  void addInto(Tensor target, Tensor value);

  /**
   * Writes {@code value} (the shape of {@code target}, any strides, either side of the host/device
   * line) into the elements of {@code target}, an F32 view of a buffer this backend made, with the
   * same conditions as {@link #addInto}: the training plane's copy of a checkpoint's weights or of
   * F32 masters into the tensors a device computes with. A device that computes in BF16 also takes
   * a BF16 target (its copy of F32 masters, e.g. a LoRA's factors), the value rounded to nearest.
   */
  void copyInto(Tensor target, Tensor value);

  /**
   * One AdamW step in place: {@code parameter} and its moments {@code m} and {@code v} (contiguous
   * F32 tensors this backend made) move by {@code gradient} (contiguous F32, the same element
   * count), per element and rounded to float after every operation, none fused, as torch's
   * single-tensor AdamW computes: {@code p ← p·shrink}, {@code m ← m + (1−β₁)·(g − m)}, {@code v ←
   * v·β₂ + (1−β₂)·g·g}, {@code p ← p − stepSize · m / (√v / √(1−β₂ᵗ) + ε)}. Every backend gives the
   * same bits, so a device keeps the training plane's masters and moments beside its gradients and
   * still takes the CPU's steps.
   *
   * @throws IllegalArgumentException for a non-F32 or non-contiguous operand or a size mismatch
   */
  void adamw(Tensor parameter, Tensor gradient, Tensor m, Tensor v, AdamWStep step);

  /**
   * {@link #adamw} of several parameters with one step's scalars, each gradient first multiplied by
   * {@code gradientScale} in float (1 leaves it as is): a global-norm clipping's coefficient folded
   * into the step rather than a pass over every gradient of its own. A device backend runs a whole
   * model's parameters in a few launches instead of one per tensor. This default is that loop,
   * scaling with {@link #affine}.
   */
  default void adamw(List<AdamWTensors> tensors, float gradientScale, AdamWStep step) {
    for (AdamWTensors t : tensors) {
      Tensor g = gradientScale == 1f ? t.gradient() : affine(t.gradient(), gradientScale, 0f);
      adamw(t.parameter(), g, t.m(), t.v(), step);
    }
  }

  /** One parameter's operands of a multi-tensor {@link #adamw(List, float, AdamWStep)}. */
  record AdamWTensors(Tensor parameter, Tensor gradient, Tensor m, Tensor v) {}

  /**
   * Σ x² of each of {@code tensors} (F32, this backend's), as one F32 {@code [n]} tensor of this
   * backend in their order (at least one): a global gradient norm's parts, read back in one
   * download. This default sums each tensor's rows (its first dimension), then those row sums, each
   * tensor's squares dying as soon as they are summed; a device backend sums every tensor in a few
   * launches.
   */
  default Tensor sumsOfSquares(List<Tensor> tensors) {
    List<Tensor> sums = new java.util.ArrayList<>(tensors.size());
    for (Tensor t : tensors) {
      sums.add(
          scoped(
              () -> {
                int rows = t.rank() >= 2 ? t.dim(0) : 1;
                int columns = Math.toIntExact(t.numel() / rows);
                Tensor perRow = sumLastDim(mul(t, t).reshape(rows, columns));
                return sumLastDim(perRow.reshape(1, rows)).reshape(1);
              }));
    }
    return concat(sums, 0);
  }

  /**
   * The scalars of one {@link #adamw} step, computed once per step as torch does (in double,
   * rounded to float): {@code shrink = 1 − lr·λ}, {@code stepSize = lr / (1−β₁ᵗ)}, {@code bias2Sqrt
   * = √(1−β₂ᵗ)}.
   */
  record AdamWStep(
      float shrink,
      float stepSize,
      float beta1Complement,
      float beta2,
      float beta2Complement,
      float bias2Sqrt,
      float eps) {}

  /** The checks every {@link #adamw} makes first. */
  static void requireAdamWOperands(Tensor parameter, Tensor gradient, Tensor m, Tensor v) {
    for (Tensor t : new Tensor[] {parameter, gradient, m, v}) {
      if (t.dtype() != DType.F32 || !t.isContiguous() || t.numel() != parameter.numel()) {
        throw new IllegalArgumentException(
            "AdamW needs contiguous F32 operands of " + parameter.numel() + " elements, got " + t);
      }
    }
  }

  /** The checks every {@link #addInto} and {@link #copyInto} makes first. */
  static void requireInPlaceTarget(Tensor target, Tensor value) {
    requireInPlaceTarget(target, value, false);
  }

  /**
   * {@link #requireInPlaceTarget(Tensor, Tensor)}, a BF16 target allowed too where {@code bf16}: a
   * device's BF16 copy of F32 masters it computes with ({@link #copyInto} rounds the value once).
   */
  static void requireInPlaceTarget(Tensor target, Tensor value, boolean bf16) {
    if (!Arrays.equals(target.shape(), value.shape())) {
      throw new IllegalArgumentException(
          "in place: a value of shape "
              + Arrays.toString(value.shape())
              + " for a target of shape "
              + Arrays.toString(target.shape()));
    }
    if (target.dtype() != DType.F32 && !(bf16 && target.dtype() == DType.BF16)) {
      throw new IllegalArgumentException(
          "in place needs an F32" + (bf16 ? " or BF16" : "") + " target, not " + target);
    }
    for (int d = 0; d < target.rank(); d++) {
      if (target.stride(d) == 0 && target.dim(d) > 1) {
        throw new IllegalArgumentException(
            "in place: target " + target + " repeats elements along dimension " + d);
      }
    }
  }

  /**
   * Whether every element of {@code t} is finite (no NaN, no ±Inf); integer tensors always are. A
   * device backend reduces on the device and copies one flag back, so the engine can check every
   * step's output without downloading it. The default scans a host copy.
   */
  default boolean isFinite(Tensor t) {
    return !t.dtype().isFloating()
        || isFiniteOnHost(t.device().kind() == Device.Kind.CPU ? t : download(t));
  }

  /**
   * What {@code failure}, thrown by one of this backend's calls, means for the pool: a device
   * backend knows which of its errors leave the context unusable and which are out-of-memory. The
   * default (the CPU) knows no device state: every failure is the request's own.
   */
  default Fault classify(RuntimeException failure) {
    return new Fault.RequestFatal(
        failure.getMessage() == null ? failure.getClass().getSimpleName() : failure.getMessage());
  }

  /** {@link #isFinite} of a CPU tensor, which needs no backend. */
  static boolean isFiniteOnHost(Tensor host) {
    if (host.dtype().isFloating()) {
      for (float v : host.toFloatArray()) {
        if (!Float.isFinite(v)) {
          return false;
        }
      }
    }
    return true;
  }

  /** Elementwise unary operations. */
  enum UnaryOp {
    NEG,
    EXP,
    TANH,
    SQRT,
    RSQRT,
    SIN,
    COS,
    RELU,
    SIGMOID,
    ABS,
    SQUARE
  }

  /** Elementwise binary operations. */
  enum BinaryOp {
    ADD,
    SUB,
    MUL,
    DIV,
    MAX,
    MIN
  }
}

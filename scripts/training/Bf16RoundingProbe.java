// Which BF16 rounding costs the tiny DiT's gradients their precision (issue 16, item 3: on a GPU
// in BF16, blocks.1.attn1.to_k.bias is 1.28e-2 off the CPU's where the bound is 1e-2), simulated
// on the CPU: the forward's results rounded to BF16 (round to nearest even) where the CUDA
// backend's BF16 mode holds BF16 (the activations, not what is made in F32), a linear's input,
// weight and bias too, as that mode reads them; the backward exact unless a variant says. Each
// variant's gradients against the F32 CPU's: how many over 1e-2, that bias, the worst five.
// Variants leave one kind of result F32 (the self-attention's q and k projections, the attention
// outputs, the norms), emulate flash.cu's forward (P rounded for P·V) and its backward (q, k, v,
// dO read in BF16, P recomputed, dV from P rounded, dS into dQ rounded once and into dK as two
// BF16 parts). docs/training.md ("Not yet") has the figures.
//   java --add-modules jdk.incubator.vector -cp cli/target/stepweave.jar \
//       scripts/training/Bf16RoundingProbe.java [GOLDEN_DIR]
import dev.stepweave.models.wan.transformer.AdapterRows;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.training.autograd.RecordingBackend;
import dev.stepweave.training.objective.FlowMatching;
import dev.stepweave.training.parity.TrainingParity;
import dev.stepweave.training.wan.TrainableTransformer;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.util.*;
import java.util.function.Predicate;

public class Bf16RoundingProbe {
  static final CpuBackend CPU = new CpuBackend();
  static boolean rounding;

  static float bf16(float f) {
    int b = Float.floatToRawIntBits(f);
    if ((b & 0x7f800000) == 0x7f800000) return f;
    b += 0x7fff + ((b >>> 16) & 1);
    return Float.intBitsToFloat(b & 0xffff0000);
  }

  static Tensor round(Tensor t) {
    if (t == null || t.dtype() != DType.F32) return t;
    float[] v = t.toFloatArray();
    for (int i = 0; i < v.length; i++) v[i] = bf16(v[i]);
    return Tensor.of(v, t.shape());
  }

  /** Storage of the tensors the BF16 mode would hold in BF16 (views share it), by identity. */
  static final Set<Object> BF16 = Collections.newSetFromMap(new IdentityHashMap<>());

  static boolean isBf16(Object o) {
    if (o instanceof Tensor t) return t.dtype() == DType.BF16 || BF16.contains(t.storage());
    if (o instanceof List<?> l) return l.stream().anyMatch(Bf16RoundingProbe::isBf16);
    return false;
  }

  static Tensor tagged(Tensor t) {
    Tensor r = round(t);
    BF16.add(r.storage());
    return r;
  }

  /**
   * The CPU backend as the CUDA backend's BF16 mode holds values while {@link #rounding}: the
   * model's activations (its upload to {@code activationDType()}, BF16 then) and every result of an
   * operation reading one are rounded to BF16; a linear over such an input reads its weight and
   * bias rounded too (the per-call BF16 copy of an F32 master); what is made in F32 (timestep
   * embeddings, modulation vectors) stays F32. {@code keepLinear} and {@code keepOps} name the
   * results left F32 (rounding their inputs as before).
   */
  static Backend rounded(Predicate<Object[]> keepLinear, Set<String> keepOps) {
    return (Backend)
        Proxy.newProxyInstance(
            Backend.class.getClassLoader(),
            new Class<?>[] {Backend.class},
            (proxy, m, args) -> {
              String name = m.getName();
              if (name.equals("activationDType")) return rounding ? DType.BF16 : DType.F32;
              if (rounding && name.equals("upload") && args[1] == DType.BF16) {
                return tagged(CPU.upload((Tensor) args[0], DType.F32));
              }
              // The CUDA backend's dtype rules: an elementwise binary op is BF16 only when both its
              // operands are, a matmul's result is F32, the rest follow their BF16 input.
              boolean both = Set.of("binary", "add", "sub", "mul", "div", "matmul").contains(name);
              boolean bf16 =
                  rounding
                      && args != null
                      && (both
                          ? Arrays.stream(args).filter(x -> x instanceof Tensor).allMatch(Bf16RoundingProbe::isBf16)
                          : Arrays.stream(args).anyMatch(Bf16RoundingProbe::isBf16));
              if (name.equals("matmul")) bf16 = false;
              if (rounding && name.equals("conv3d") && args.length == 6 && args[5] == DType.BF16) {
                bf16 = true;
                args = args.clone();
                args[5] = DType.F32;
              }
              boolean keep = keepOps.contains(name) || name.equals("download");
              if (bf16 && name.equals("linear") && args.length == 3) {
                keep |= keepLinear.test(args);
                args = new Object[] {round((Tensor) args[0]), round((Tensor) args[1]), round((Tensor) args[2])};
              }
              if (name.equals("attentionBackward") && flashBackward) {
                return flashBackward((Backend.AttentionForward) args[0], (Tensor) args[1]);
              }
              if (bf16 && name.equals("attention") && args[3] == null && flashForward) {
                Tensor out = flashAttention(round((Tensor) args[0]), round((Tensor) args[1]), round((Tensor) args[2]), (Float) args[4]);
                return keep ? out : tagged(out);
              }
              Object r;
              try {
                r = m.invoke(CPU, args);
              } catch (InvocationTargetException e) {
                throw e.getCause();
              }
              if (!bf16 || keep) return r;
              if (r instanceof Tensor t) return tagged(t);
              if (r instanceof List<?> l && !l.isEmpty() && l.get(0) instanceof Tensor) {
                return l.stream().map(t -> tagged((Tensor) t)).toList();
              }
              return r;
            });
  }

  /** Whether attention runs as flash.cu's forward does: P rounded to BF16 for its product with V. */
  static boolean flashForward;

  /**
   * One query row's exp(scale q·kⱼ − max) into {@code e} (keys j of one batch item and head: key j
   * at {@code ((keyRow0 + j·heads)·d)}), returning their sum.
   */
  static float exponentials(float[] qv, float[] kv, int qi, int keyRow0, int heads, int d, float scale, float[] e) {
    float max = Float.NEGATIVE_INFINITY;
    for (int j = 0; j < e.length; j++) {
      int kj = (keyRow0 + j * heads) * d;
      float dot = 0;
      for (int c = 0; c < d; c++) dot += qv[qi + c] * kv[kj + c];
      e[j] = dot * scale;
      max = Math.max(max, e[j]);
    }
    float sum = 0;
    for (int j = 0; j < e.length; j++) { e[j] = (float) Math.exp(e[j] - max); sum += e[j]; }
    return sum;
  }

  /** q [B, Lq, H, D], k and v [B, Lk, H, D]: softmax(scale q kᵀ) v with P rounded for P·V. */
  static Tensor flashAttention(Tensor q, Tensor k, Tensor v, float scale) {
    int b = q.dim(0), lq = q.dim(1), h = q.dim(2), d = q.dim(3), lk = k.dim(1);
    float[] qv = q.toFloatArray(), kv = k.toFloatArray(), vv = v.toFloatArray();
    float[] out = new float[b * lq * h * d];
    float[] s = new float[lk];
    for (int n = 0; n < b; n++)
      for (int head = 0; head < h; head++)
        for (int i = 0; i < lq; i++) {
          int qi = ((n * lq + i) * h + head) * d;
          float sum = exponentials(qv, kv, qi, n * lk * h + head, h, d, scale, s);
          float[] acc = new float[d];
          for (int j = 0; j < lk; j++) {
            float pr = bf16(s[j]);
            int vj = ((n * lk + j) * h + head) * d;
            for (int c = 0; c < d; c++) acc[c] += pr * vv[vj + c];
          }
          for (int c = 0; c < d; c++) out[qi + c] = acc[c] / sum;
        }
    return Tensor.of(out, b, lq, h, d);
  }

  /** Whether the backward's operations follow the BF16 mode's dtype rules too (else exact). */
  static boolean backwardRules;

  /** Whether the attention backward runs as flash.cu's does (below). */
  static boolean flashBackward;

  /**
   * flash.cu's backward: q, k, v and dO read in BF16; P recomputed in F32; dV from P rounded to
   * BF16; dS = P (dP - D) in F32, into dQ rounded once, into dK as two BF16 parts.
   */
  static Backend.AttentionGradients flashBackward(Backend.AttentionForward f, Tensor gradOut) {
    Tensor q = round(f.q()), k = round(f.k()), v = round(f.v()), dO = round(gradOut);
    int b = q.dim(0), lq = q.dim(1), h = q.dim(2), d = q.dim(3), lk = k.dim(1);
    float scale = f.scale();
    float[] qv = q.toFloatArray(), kv = k.toFloatArray(), vv = v.toFloatArray(), ov = dO.toFloatArray();
    float[] dq = new float[qv.length], dk = new float[kv.length], dv = new float[vv.length];
    float[] p = new float[lk], dp = new float[lk];
    for (int n = 0; n < b; n++)
      for (int head = 0; head < h; head++)
        for (int i = 0; i < lq; i++) {
          int qi = ((n * lq + i) * h + head) * d;
          float sum = exponentials(qv, kv, qi, n * lk * h + head, h, d, scale, p);
          float dTerm = 0;
          for (int j = 0; j < lk; j++) {
            p[j] /= sum;
            int vj = ((n * lk + j) * h + head) * d;
            float dot = 0;
            for (int c = 0; c < d; c++) dot += ov[qi + c] * vv[vj + c];
            dp[j] = dot;
            dTerm += p[j] * dot;
          }
          for (int j = 0; j < lk; j++) {
            int kj = ((n * lk + j) * h + head) * d;
            float pr = bf16(p[j]);
            float ds = p[j] * (dp[j] - dTerm);
            float hi = bf16(ds), lo = bf16(ds - hi), one = bf16(ds);
            for (int c = 0; c < d; c++) {
              dv[kj + c] += pr * ov[qi + c];
              dk[kj + c] += scale * (hi * qv[qi + c] + lo * qv[qi + c]);
              dq[qi + c] += scale * one * kv[kj + c];
            }
          }
        }
    return new Backend.AttentionGradients(
        Tensor.of(dq, q.shape()), Tensor.of(dk, k.shape()), Tensor.of(dv, v.shape()), null);
  }

  record Result(Map<String, Tensor> gradients, float loss) {}

  static Result gradients(Path golden, Backend backend, Set<String> keepWeights) {
    var component = DiffusersDirectory.open(golden.resolve("wan21-lora-tiny")).component("transformer");
    var cfg = WanTransformerConfig.fromJson(component.config());
    FlowMatching.Batch batch;
    try (SafetensorsFile rec = SafetensorsFile.open(golden.resolve("wan21-train-expected/dit_train.safetensors"))) {
      batch = TrainingParity.batch(rec);
    }
    try (TensorSource weights = component.openWeights()) {
      RecordingBackend recording = new RecordingBackend(backend);
      TrainableTransformer model = TrainableTransformer.load(cfg, weights, recording);
      keepIds.clear();
      BF16.clear();
      model.parameters().forEach((name, p) -> { if (keepWeights.contains(name)) keepIds.add(id(p)); });
      FlowMatching.Noised noised = FlowMatching.noised(recording, batch);
      rounding = true;
      var g =
          model.lossAndGradientsAt(
              noised.xt(), noised.timestep(), batch.context(), model.parameters(), AdapterRows.NONE,
              prediction -> {
                rounding = backwardRules; // the backward exact, or by the same dtype rules
                return FlowMatching.meanSquaredError(recording, prediction, noised.target());
              });
      rounding = false;
      return new Result(g.gradients(), (float) g.loss());
    }
  }

  static final Set<String> keepIds = new HashSet<>();

  static String id(Tensor t) {
    return t.storage().segment().address() + "+" + t.offset() + Arrays.toString(t.shape());
  }

  static double relL2(Tensor a, Tensor b) {
    float[] x = a.toFloatArray(), y = b.toFloatArray();
    double d = 0, n = 0;
    for (int i = 0; i < x.length; i++) { d += (x[i] - y[i]) * (double) (x[i] - y[i]); n += y[i] * (double) y[i]; }
    return Math.sqrt(d / n);
  }

  public static void main(String[] a) {
    Path golden = Path.of(a.length > 0 ? a[0] : "testdata/golden");
    Result want = gradients(golden, CPU, Set.of());
    Set<String> qk = new HashSet<>();
    for (int b = 0; b < 2; b++) for (String l : List.of("to_q", "to_k")) qk.add("blocks." + b + ".attn1." + l + ".weight");
    Predicate<Object[]> byWeight = args -> keepIds.contains(id((Tensor) args[1]));
    Map<String, Object[]> variants = new LinkedHashMap<>();
    variants.put("the BF16 mode's forward roundings", new Object[] {Set.<String>of(), Set.<String>of()});
    variants.put("self-attention q/k projections F32", new Object[] {qk, Set.<String>of()});
    variants.put("attention outputs F32", new Object[] {Set.<String>of(), Set.of("attention")});
    variants.put("norm outputs F32 (rmsNormRope, layer norms)", new Object[] {Set.<String>of(),
        Set.of("rmsNormRope", "rmsNorm", "layerNorm", "modulatedLayerNorm", "residualLayerNorm", "residualModulatedLayerNorm")});
    variants.put("flash: P rounded for P·V", new Object[] {Set.<String>of(), Set.<String>of()});
    variants.put("flash: P rounded, attention outputs F32", new Object[] {Set.<String>of(), Set.of("attention")});
    variants.put("flash: P rounded, q/k projections F32", new Object[] {qk, Set.<String>of()});
    variants.put("flash forward and backward", new Object[] {Set.<String>of(), Set.<String>of()});
    variants.put("flash forward and backward, attention outputs F32", new Object[] {Set.<String>of(), Set.of("attention")});
    variants.put("flash forward and backward, q/k projections F32", new Object[] {qk, Set.<String>of()});
    variants.put("flash forward and backward, dtype rules in the backward", new Object[] {Set.<String>of(), Set.<String>of()});
    variants.put("flash forward and backward, dtype rules in the backward, q/k projections F32", new Object[] {qk, Set.<String>of()});
    for (var v : variants.entrySet()) {
      backwardRules = v.getKey().contains("dtype rules in the backward");
      flashForward = v.getKey().startsWith("flash");
      flashBackward = v.getKey().startsWith("flash forward and backward");
      @SuppressWarnings("unchecked") Set<String> weights = (Set<String>) v.getValue()[0];
      @SuppressWarnings("unchecked") Set<String> ops = (Set<String>) v.getValue()[1];
      Result got = gradients(golden, rounded(byWeight, ops), weights);
      TreeMap<Double, String> errors = new TreeMap<>(Comparator.reverseOrder());
      int over = 0;
      for (var e : want.gradients().entrySet()) {
        double err = relL2(got.gradients().get(e.getKey()), e.getValue());
        errors.put(err, e.getKey());
        if (err > 1e-2) over++;
      }
      String key = "blocks.1.attn1.to_k.bias";
      System.out.printf(Locale.ROOT, "%s: loss %.6f (F32 %.6f), %d of %d over 1e-2, %s %.3e; worst %s%n",
          v.getKey(), got.loss(), want.loss(), over, errors.size(), key,
          relL2(got.gradients().get(key), want.gradients().get(key)),
          errors.entrySet().stream().limit(5).map(x -> String.format(Locale.ROOT, "%s %.2e", x.getValue(), x.getKey())).toList());
    }
  }
}

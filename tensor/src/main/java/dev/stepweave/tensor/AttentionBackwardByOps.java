package dev.stepweave.tensor;

import dev.stepweave.tensor.Backend.AttentionForward;
import dev.stepweave.tensor.Backend.AttentionGradients;
import java.util.ArrayList;
import java.util.List;

/**
 * The backward of {@link Backend#attention} written with a backend's own operations (batched
 * matmul, softmax, broadcasting elementwise ops, a last-dim sum), so it runs wherever those run —
 * on a GPU every step stays on the device. Query rows go in chunks so the scores of one chunk,
 * {@code [B, H, chunk, Lk]}, stay within a scratch budget; the Lq×Lk matrix is never formed, except
 * the bias gradient when it is asked for (which is that size). Per chunk:
 *
 * <pre>
 *   P  = softmax(scale·Q·Kᵀ + bias)      dP = dO·Vᵀ      D = rowsum(P ∘ dP)
 *   dS = P ∘ dP − P ∘ D                  dQ = scale·dS·K
 *   dK += scale·dSᵀ·Q                    dV += Pᵀ·dO
 * </pre>
 *
 * <p>D is {@code rowsum(dO ∘ O)} in exact arithmetic, and the flash formulation reads it from the
 * forward's output; here it is summed from the very P and dP it is subtracted from, so each row of
 * dS sums to zero to F32 rounding whatever precision the forward ran in. That is what keeps the
 * keys' shift invariance (adding one vector to every key changes no softmax, so Σ dK = 0): with a
 * BF16 output its 2⁻⁹ rounding would enter every dS and survive the cancellation in Σ dK — the
 * gradient of a key projection's bias, which is that sum (or nearly, through a norm), came out 2 %
 * wrong on an H100 (run 24).
 *
 * <p>Masks should be large finite negatives, as the models' are: a row whose every key is −∞ has no
 * softmax (the backends' softmax gives NaN there), and its NaN reaches every key's dK and dV here,
 * where the CPU's own kernel gives that row zero gradients.
 */
public final class AttentionBackwardByOps {
  private AttentionBackwardByOps() {}

  /**
   * {@link Backend#attentionBackward} through {@code ops}; {@code scratchBytes} bounds the F32
   * score-sized tensors of one chunk (about four are alive at once).
   */
  public static AttentionGradients backward(
      Backend ops,
      AttentionForward forward,
      Tensor gradOut,
      boolean biasGradient,
      long scratchBytes) {
    forward.gradientOfOutput(gradOut);
    Tensor q = forward.q(), k = forward.k(), v = forward.v(), bias = forward.bias();
    // BF16 activations (a device's performance mode): dO·Vᵀ and Pᵀ·dO take dO in BF16 too, one
    // rounding of an F32 gradient, as the forward's products took their operands. D and dS stay
    // F32 (see the class comment).
    Tensor dO = q.dtype() == DType.BF16 ? ops.upload(gradOut, DType.BF16) : gradOut;
    float scale = forward.scale();
    int b = q.dim(0), lq = q.dim(1), h = q.dim(2), lk = k.dim(1);
    boolean wantBias = biasGradient && bias != null;
    if ((long) lq * lk * b * h == 0) {
      // Nothing to sum over: every gradient is zero (an empty key set contributes nothing).
      return new AttentionGradients(
          ops.zeros(DType.F32, q.shape()),
          ops.zeros(DType.F32, k.shape()),
          ops.zeros(DType.F32, v.shape()),
          wantBias ? ops.zeros(DType.F32, b, h, lq, lk) : null);
    }
    Tensor biasView = OpShapes.attentionBias(bias, b, h, lq, lk);
    // [B, H, L, *] views of the [B, L, H, *] inputs; the matmuls read them through their strides.
    Tensor keys = k.permute(0, 2, 1, 3);
    Tensor keysT = k.permute(0, 2, 3, 1);
    Tensor valuesT = v.permute(0, 2, 3, 1);
    long rowBytes = 4L * b * h * lk * Float.BYTES;
    int chunk = (int) Math.max(1, Math.min(lq, scratchBytes / rowBytes));
    List<Tensor> dq = new ArrayList<>();
    List<Tensor> dBias = new ArrayList<>();
    Tensor dk = null;
    Tensor dv = null;
    for (int from = 0; from < lq; from += chunk) {
      int to = Math.min(lq, from + chunk);
      Tensor qc = q.slice(1, from, to).permute(0, 2, 1, 3); // [B, H, c, D]
      Tensor dOc = dO.slice(1, from, to).permute(0, 2, 1, 3); // [B, H, c, Dv]
      Tensor scores = ops.affine(ops.matmul(qc, keysT), scale, 0f);
      if (biasView != null) {
        scores = ops.add(scores, biasView.slice(2, from, to));
      }
      Tensor p = ops.softmax(scores); // [B, H, c, Lk]
      Tensor dp = ops.matmul(dOc, valuesT);
      Tensor pdp = ops.mul(p, dp);
      Tensor ds = ops.sub(pdp, ops.mul(p, ops.sumLastDim(pdp))); // D: [B, H, c, 1]
      dq.add(ops.affine(ops.matmul(ds, keys), scale, 0f));
      Tensor dkc = ops.affine(ops.matmul(ds.permute(0, 1, 3, 2), qc), scale, 0f);
      Tensor dvc = ops.matmul(p.permute(0, 1, 3, 2), dOc);
      dk = dk == null ? dkc : ops.add(dk, dkc);
      dv = dv == null ? dvc : ops.add(dv, dvc);
      if (wantBias) {
        dBias.add(ds);
      }
    }
    return new AttentionGradients(
        bshd(ops, joined(ops, dq, 2)),
        bshd(ops, dk),
        bshd(ops, dv),
        dBias.isEmpty() ? null : ops.contiguous(joined(ops, dBias, 2)));
  }

  private static Tensor joined(Backend ops, List<Tensor> parts, int dim) {
    return parts.size() == 1 ? parts.getFirst() : ops.concat(parts, dim);
  }

  /** A {@code [B, H, L, D]} result as a contiguous {@code [B, L, H, D]} tensor. */
  private static Tensor bshd(Backend ops, Tensor bhld) {
    return ops.contiguous(bhld.permute(0, 2, 1, 3));
  }
}

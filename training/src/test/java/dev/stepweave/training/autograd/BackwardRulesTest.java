package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Backend.BinaryOp;
import dev.stepweave.tensor.Backend.UnaryOp;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.LowRank;
import dev.stepweave.tensor.ResidualNorm;
import dev.stepweave.tensor.Tensor;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Every backward rule against finite differences ({@link GradientCheck}) at random odd shapes: each
 * op alone, the fused compositions a model calls, and views of every kind between ops.
 */
class BackwardRulesTest {
  private final GradientCheck check = new GradientCheck(16);

  @Test
  void linearWithAndWithoutBias() {
    check.check(
        "linear",
        (b, in) -> b.linear(in.get(0), in.get(1), in.get(2)),
        List.of(check.normal(3, 5, 7), check.normal(11, 7), check.normal(11)));
    check.check(
        "linear without bias",
        (b, in) -> b.linear(in.get(0), in.get(1), null),
        List.of(check.normal(9, 7), check.normal(5, 7)));
  }

  /**
   * One low-rank update recorded as one node (the composition's rules chained): y, x and both
   * factors, by finite differences; and a batch of two rows, one with an update and one without.
   */
  @Test
  void aLowRankUpdate() {
    check.check(
        "addLowRankUpdate",
        (b, in) ->
            b.addLowRankUpdate(in.get(0), in.get(1), new LowRank(in.get(2), in.get(3), 0.7f)),
        List.of(
            check.normal(2, 5, 9), check.normal(2, 5, 7), check.normal(3, 7), check.normal(9, 3)));
    check.check(
        "addLowRank, rows with and without the update",
        (b, in) ->
            b.addLowRank(
                in.get(0),
                in.get(1),
                List.of(List.of(new LowRank(in.get(2), in.get(3), 1.3f)), List.of())),
        List.of(
            check.normal(2, 5, 9), check.normal(2, 5, 7), check.normal(3, 7), check.normal(9, 3)));
  }

  @Test
  void matmulWithBroadcastBatch() {
    check.check(
        "matmul",
        (b, in) -> b.matmul(in.get(0), in.get(1)),
        List.of(check.normal(3, 1, 5, 7), check.normal(4, 7, 3)));
  }

  @Test
  void attentionAcrossTilesWithABias() {
    // 70 queries and 67 keys cross the 64-wide tiles of the backward.
    check.check(
        "attention",
        (b, in) -> b.attention(in.get(0), in.get(1), in.get(2), in.get(3), 0.4f),
        List.of(
            check.normal(2, 70, 3, 5),
            check.normal(2, 67, 3, 5),
            check.normal(2, 67, 3, 7),
            check.normal(1, 3, 1, 67)));
    check.check(
        "attention without bias",
        (b, in) -> b.attention(in.get(0), in.get(1), in.get(2), null, 0.45f),
        List.of(check.normal(1, 9, 2, 6), check.normal(1, 13, 2, 6), check.normal(1, 13, 2, 6)));
  }

  @Test
  void conv3dWithStridesAndPadding() {
    check.check(
        "conv3d",
        (b, in) ->
            b.conv3d(in.get(0), in.get(1), in.get(2), new int[] {1, 2, 1}, new int[] {1, 0, 2}),
        List.of(check.normal(2, 3, 5, 6, 7), check.normal(5, 3, 3, 2, 3), check.normal(5)));
    check.check(
        "conv3d as a patch embedding",
        (b, in) -> b.conv3d(in.get(0), in.get(1), null, new int[] {1, 2, 2}, new int[3]),
        List.of(check.normal(1, 3, 3, 6, 4), check.normal(7, 3, 1, 2, 2)));
    // Patches over every axis, a bias, two batch entries, and the input read through a permuted
    // view: the patch rule's GEMMs.
    check.check(
        "conv3d as a patch embedding of a view",
        (b, in) ->
            b.conv3d(
                in.get(0).permute(0, 1, 2, 4, 3),
                in.get(1),
                in.get(2),
                new int[] {3, 2, 1},
                new int[3]),
        List.of(check.normal(2, 3, 6, 5, 4), check.normal(5, 3, 3, 2, 1), check.normal(5)));
    // Strides of the kernel's size but an axis that does not divide: the general rule.
    check.check(
        "conv3d with kernel-sized strides and a remainder",
        (b, in) -> b.conv3d(in.get(0), in.get(1), in.get(2), new int[] {1, 2, 2}, new int[3]),
        List.of(check.normal(1, 2, 3, 5, 4), check.normal(4, 2, 1, 2, 2), check.normal(4)));
  }

  @Test
  void normalisations() {
    check.check(
        "layerNorm",
        (b, in) -> b.layerNorm(in.get(0), in.get(1), in.get(2), 1e-6f),
        List.of(check.normal(3, 5, 13), check.normal(13), check.normal(13)));
    check.check(
        "layerNorm without affine",
        (b, in) -> b.layerNorm(in.get(0), null, null, 1e-5f),
        List.of(check.normal(7, 11)));
    check.check(
        "rmsNorm",
        (b, in) -> b.rmsNorm(in.get(0), in.get(1), 1e-6f),
        List.of(check.normal(5, 3, 9), check.normal(9)));
    check.check(
        "l2Normalize over channels",
        (b, in) -> b.l2Normalize(in.get(0), 1, 1e-12f),
        List.of(check.normal(2, 5, 3, 7)));
    check.check("softmax", (b, in) -> b.softmax(in.get(0)), List.of(check.normal(3, 4, 11)));
  }

  @Test
  void activations() {
    check.check("gelu tanh", (b, in) -> b.gelu(in.get(0), true), List.of(check.normal(5, 13)));
    check.check("gelu erf", (b, in) -> b.gelu(in.get(0), false), List.of(check.normal(5, 13)));
    check.check("silu", (b, in) -> b.silu(in.get(0)), List.of(check.normal(7, 9)));
  }

  @Test
  void everyUnaryOp() {
    for (UnaryOp op : UnaryOp.values()) {
      Tensor x =
          switch (op) {
            case SQRT, RSQRT -> check.uniform(0.5, 2.5, 3, 7);
            // kinks at zero: |x| ≥ 0.1 and steps far smaller
            case RELU, ABS -> check.awayFromZero(0.1, 2, 3, 7);
            default -> check.normal(3, 7);
          };
      check.check(op.name(), (b, in) -> b.unary(in.get(0), op), List.of(x));
    }
  }

  @Test
  void everyBinaryOpWithBroadcasting() {
    for (BinaryOp op : BinaryOp.values()) {
      Tensor a = check.normal(3, 1, 5);
      Tensor b =
          switch (op) {
            case DIV -> check.awayFromZero(0.5, 2, 4, 5);
            // MAX/MIN: a and b at least 0.1 apart, so the winner never changes within a step
            case MAX, MIN -> Tensor.of(apart(a.expand(3, 4, 5).toFloatArray()), 3, 4, 5);
            default -> check.normal(4, 5);
          };
      check.check(op.name(), (bk, in) -> bk.binary(in.get(0), in.get(1), op), List.of(a, b));
    }
  }

  private float[] apart(float[] a) {
    float[] b = check.awayFromZero(0.1, 1.5, a.length).toFloatArray();
    for (int i = 0; i < a.length; i++) {
      b[i] += a[i];
    }
    return b;
  }

  @Test
  void scalarOps() {
    check.check("affine", (b, in) -> b.affine(in.get(0), -1.7f, 0.3f), List.of(check.normal(4, 6)));
    // values at least 0.1 inside or outside [-0.5, 0.5]
    float[] v = check.uniform(0.6, 2, 24).toFloatArray();
    float[] inner = check.uniform(-0.4, 0.4, 24).toFloatArray();
    for (int i = 0; i < v.length; i += 2) {
      v[i] = inner[i];
      v[i + 1] = i % 4 == 1 ? v[i + 1] : -v[i + 1];
    }
    check.check(
        "clamp", (b, in) -> b.clamp(in.get(0), -0.5f, 0.5f), List.of(Tensor.of(v, 4, 6)), 1);
  }

  @Test
  void rope() {
    Tensor cos = check.normal(5, 3);
    Tensor sin = check.normal(5, 3);
    check.check("rope", (b, in) -> b.rope(in.get(0), cos, sin), List.of(check.normal(2, 5, 3, 6)));
  }

  @Test
  void shapeOps() {
    check.check(
        "concat",
        (b, in) -> b.concat(List.of(in.get(0), in.get(1), in.get(0)), 1),
        List.of(check.normal(2, 3, 5), check.normal(2, 4, 5)));
    check.check(
        "pad and crop",
        (b, in) -> b.pad(in.get(0), new int[] {2, -1, 0, 3, -1, 1}, 0.5f),
        List.of(check.normal(2, 5, 4, 6)));
    check.check(
        "upsampleNearest2d",
        (b, in) -> b.upsampleNearest2d(in.get(0), 2, 3),
        List.of(check.normal(2, 3, 4, 5)));
    check.check("sumLastDim", (b, in) -> b.sumLastDim(in.get(0)), List.of(check.normal(3, 5, 7)));
    check.check(
        "contiguous of a permutation",
        (b, in) -> b.contiguous(in.get(0).permute(2, 0, 1)),
        List.of(check.normal(3, 5, 7)));
    Tensor ids = Tensor.ofLongs(new long[] {4, 0, 4, 2, 1, 4}, 2, 3);
    check.check("embedding", (b, in) -> b.embedding(in.get(0), ids), List.of(check.normal(5, 7)));
  }

  @Test
  void oneGradientHandedToSeveralInputsStaysEachOnesOwn() {
    // add hands its output's gradient to both inputs; the first becomes a's whole buffer, so b
    // must get a copy before the second add's gradient is added into a's.
    check.check(
        "shared gradients",
        (b, in) -> {
          Tensor a = in.get(0);
          return b.mul(b.add(a, in.get(1)), b.add(a, in.get(2)));
        },
        List.of(check.normal(3, 5), check.normal(3, 5), check.normal(3, 5)));
  }

  @Test
  void viewsBetweenOpsNeedNoRules() {
    // permute, slice, select, unsqueeze, expand and reshape of tracked tensors, one tensor read
    // through several views at once: the gradients meet in the storage.
    check.check(
        "views",
        (b, in) -> {
          Tensor x = in.get(0);
          Tensor h = b.silu(x);
          Tensor sliced = h.permute(1, 0, 2).slice(0, 1, 4);
          Tensor row = h.select(1, 2).unsqueeze(0).expand(3, 3, 5);
          Tensor prod = b.mul(sliced, row);
          return b.add(b.contiguous(prod).reshape(9, 5), x.reshape(15, 5).slice(0, 3, 12));
        },
        List.of(check.normal(3, 5, 5)));
  }

  @Test
  void theFusedCompositionsAModelCalls() {
    check.check(
        "modulatedLayerNorm",
        (b, in) -> b.modulatedLayerNorm(in.get(0), in.get(1), in.get(2), 1e-6f),
        List.of(check.normal(2, 5, 9), check.normal(2, 1, 9), check.normal(2, 1, 9)));
    Tensor cos = check.normal(5, 2);
    Tensor sin = check.normal(5, 2);
    check.check(
        "rmsNormRope",
        (b, in) -> b.rmsNormRope(in.get(0), in.get(1), 1e-6f, 3, cos, sin),
        List.of(check.normal(2, 5, 12), check.normal(12)));
    check.check(
        "gatedResidual",
        (b, in) -> b.gatedResidual(in.get(0), in.get(1), in.get(2)),
        List.of(check.normal(2, 5, 9), check.normal(2, 5, 9), check.normal(2, 1, 9)));
    // Both results read downstream, so both nodes (residual, then its norm) pass gradients on.
    check.check(
        "residualLayerNorm",
        (b, in) -> {
          ResidualNorm rn =
              b.residualLayerNorm(in.get(0), in.get(1), in.get(2), in.get(3), in.get(4), 1e-6f);
          return b.mul(rn.residual(), rn.normed());
        },
        List.of(
            check.normal(2, 5, 9),
            check.normal(2, 5, 9),
            check.normal(2, 1, 9),
            check.normal(9),
            check.normal(9)));
    check.check(
        "residualModulatedLayerNorm without a gate",
        (b, in) -> {
          ResidualNorm rn =
              b.residualModulatedLayerNorm(in.get(0), in.get(1), null, in.get(2), in.get(3), 1e-6f);
          return b.mul(rn.residual(), rn.normed());
        },
        List.of(
            check.normal(2, 5, 9),
            check.normal(2, 5, 9),
            check.normal(2, 1, 9),
            check.normal(2, 1, 9)));
    check.check(
        "channelNorm with SiLU",
        (b, in) -> b.channelNorm(in.get(0), in.get(1), 1e-12f, true, DType.F32),
        List.of(check.normal(2, 5, 3, 4, 3), check.normal(5, 1, 1, 1)));
    check.check(
        "channelNormAfter",
        (b, in) -> b.channelNormAfter(in.get(0), in.get(1), in.get(2), 1e-12f, true, DType.F32),
        List.of(
            check.normal(1, 5, 2, 3, 4), check.normal(1, 5, 3, 3, 4), check.normal(5, 1, 1, 1)));
    check.check(
        "linearGeluTanh",
        (b, in) -> b.linearGeluTanh(in.get(0), in.get(1), in.get(2)),
        List.of(check.normal(2, 5, 7), check.normal(9, 7), check.normal(9)));
    check.check(
        "linearLowRank",
        (b, in) ->
            b.linearLowRank(
                in.get(0),
                in.get(1),
                in.get(2),
                true,
                List.of(List.of(new LowRank(in.get(3), in.get(4), 0.7f)), List.of())),
        List.of(
            check.normal(2, 5, 7),
            check.normal(9, 7),
            check.normal(9),
            check.normal(3, 7),
            check.normal(9, 3)));
  }
}

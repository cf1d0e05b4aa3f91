package dev.stepweave.tensor.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.LowRank;
import dev.stepweave.tensor.Tensor;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * Results that must not move by a single bit: a linear row whatever batch it is computed in, and
 * every operation whatever the thread count.
 */
class InvarianceTest {
  private final SplittableRandom random = new SplittableRandom(7);

  private Tensor random(int... shape) {
    float[] v = new float[(int) Tensor.numel(shape)];
    for (int i = 0; i < v.length; i++) {
      v[i] = (float) (random.nextDouble() * 2 - 1);
    }
    return Tensor.of(v, shape);
  }

  @Test
  void linearRowIsIndependentOfBatchSizeAndPosition() {
    CpuBackend cpu = new CpuBackend(2);
    int k = 300, n = 70;
    Tensor w = random(n, k), bias = random(n);
    Tensor rows = random(1000, k);
    float[] alone = cpu.linear(rows.slice(0, 5, 6), w, bias).toFloatArray();
    for (int[] batch : new int[][] {{0, 7}, {5, 12}, {3, 300}, {0, 1000}}) {
      Tensor out = cpu.linear(rows.slice(0, batch[0], batch[1]), w, bias);
      assertArrayEquals(
          alone,
          out.select(0, 5 - batch[0]).toFloatArray(),
          "row 5 within rows [" + batch[0] + ", " + batch[1] + ")");
    }
  }

  /**
   * The default low-rank update computes the rows that share their updates together; each row must
   * still be the bits of that row alone (as the serving engine's mixed LoRA batches require).
   */
  @Test
  void lowRankRowsSharingUpdatesGetTheBitsTheyGetAlone() {
    CpuBackend cpu = new CpuBackend(2);
    int length = 9, in = 40, out = 24;
    LowRank a = new LowRank(random(4, in), random(out, 4), 0.5f);
    LowRank b = new LowRank(random(8, in), random(out, 8), 2f);
    // Runs of one adapter, none, both, and a lone row at the end.
    List<List<LowRank>> rows =
        List.of(
            List.of(a),
            List.of(a),
            List.of(a),
            List.of(),
            List.of(a, b),
            List.of(a, b),
            List.of(b));
    Tensor x = random(rows.size(), length, in);
    Tensor y = random(rows.size(), length, out);
    Tensor all = cpu.addLowRank(y, x, rows);
    for (int r = 0; r < rows.size(); r++) {
      Tensor alone =
          cpu.addLowRank(
              Tensor.of(y.slice(0, r, r + 1).toFloatArray(), 1, length, out),
              x.slice(0, r, r + 1),
              List.of(rows.get(r)));
      float[] want = rows.get(r).isEmpty() ? y.select(0, r).toFloatArray() : alone.toFloatArray();
      assertArrayEquals(want, all.select(0, r).toFloatArray(), "row " + r);
    }
  }

  @Test
  void everyOperationIsIndependentOfThreadCount() {
    CpuBackend one = new CpuBackend(1);
    CpuBackend two = new CpuBackend(2);
    Tensor x = random(3, 67, 130);
    Tensor w = random(45, 130);
    Tensor q = random(2, 70, 3, 16), k = random(2, 90, 3, 16), v = random(2, 90, 3, 16);
    Tensor video = random(1, 4, 3, 9, 11), kernel = random(5, 4, 3, 3, 3);
    Tensor cos = random(70, 8), sin = random(70, 8), bias = random(3, 70, 90);
    List<Function<Backend, Tensor>> ops =
        List.of(
            b -> b.linear(x, w, null),
            b -> b.matmul(x, w.transpose(0, 1)),
            b -> b.attention(q, k, v, bias, 0.25f),
            b -> b.conv3d(video, kernel, null, new int[] {1, 1, 1}, new int[] {1, 1, 1}),
            b -> b.layerNorm(x, null, null, 1e-6f),
            b -> b.rmsNorm(x, null, 1e-6f),
            b -> b.l2Normalize(video, 1, 1e-12f),
            b -> b.softmax(x),
            b -> b.gelu(x, false),
            b -> b.gelu(x, true),
            b -> b.silu(x),
            b -> b.unary(x, Backend.UnaryOp.EXP),
            b -> b.add(x, w.select(0, 0)),
            b -> b.rope(q, cos, sin),
            b -> b.sumLastDim(x));
    for (int i = 0; i < ops.size(); i++) {
      assertArrayEquals(
          ops.get(i).apply(one).toFloatArray(),
          ops.get(i).apply(two).toFloatArray(),
          "operation " + i);
    }
  }
}

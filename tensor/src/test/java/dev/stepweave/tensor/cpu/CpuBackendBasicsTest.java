package dev.stepweave.tensor.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.Backend.BinaryOp;
import dev.stepweave.tensor.Backend.UnaryOp;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Hand-computed values for every operation on tiny inputs. */
class CpuBackendBasicsTest {
  private final CpuBackend cpu = new CpuBackend(2);

  @Test
  void linearAddsBiasToRowTimesWeightTranspose() {
    Tensor x = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3);
    Tensor w = Tensor.of(new float[] {1, 0, 0, 0, 1, 1}, 2, 3);
    Tensor b = Tensor.of(new float[] {10, 20}, 2);
    assertArrayEquals(new float[] {11, 25, 14, 31}, cpu.linear(x, w, b).toFloatArray());
  }

  @Test
  void matmulBroadcastsBatchAndReadsTransposedViews() {
    Tensor a = Tensor.of(new float[] {1, 2, 3, 4}, 1, 2, 2);
    Tensor bt = Tensor.of(new float[] {1, 0, 1, 1, 2, 0, 2, 2}, 2, 2, 2).transpose(1, 2);
    // b[0] = [[1,1],[0,1]], b[1] = [[2,2],[0,2]]
    Tensor c = cpu.matmul(a, bt);
    assertArrayEquals(new int[] {2, 2, 2}, c.shape());
    assertArrayEquals(new float[] {1, 3, 3, 7, 2, 6, 6, 14}, c.toFloatArray());
  }

  @Test
  void attentionOfOneKeyReturnsItsValue() {
    Tensor q = Tensor.of(new float[] {1, 2}, 1, 1, 1, 2);
    Tensor k = Tensor.of(new float[] {3, 4}, 1, 1, 1, 2);
    Tensor v = Tensor.of(new float[] {5, 6, 7}, 1, 1, 1, 3);
    assertArrayEquals(new float[] {5, 6, 7}, cpu.attention(q, k, v, null, 0.5f).toFloatArray());
  }

  @Test
  void attentionWeighsKeysBySoftmaxOfBiasedScores() {
    Tensor q = Tensor.of(new float[] {1}, 1, 1, 1, 1);
    Tensor k = Tensor.of(new float[] {0, 0}, 1, 2, 1, 1);
    Tensor v = Tensor.of(new float[] {0, 1}, 1, 2, 1, 1);
    Tensor bias = Tensor.of(new float[] {0, (float) Math.log(3)}, 1, 2);
    assertEquals(0.75f, cpu.attention(q, k, v, bias, 1f).getFloat(0, 0, 0, 0), 1e-6f);
  }

  @Test
  void conv3dWithUnitKernelIsChannelMixing() {
    Tensor x = Tensor.of(new float[] {1, 2, 3, 4}, 1, 2, 1, 1, 2);
    Tensor w = Tensor.of(new float[] {1, 1, 1, -1}, 2, 2, 1, 1, 1);
    Tensor out = cpu.conv3d(x, w, null, new int[] {1, 1, 1}, new int[] {0, 0, 0});
    assertArrayEquals(new float[] {4, 6, -2, -2}, out.toFloatArray());
  }

  @Test
  void conv3dPadsWithZeros() {
    Tensor x = Tensor.of(new float[] {1, 2, 3}, 1, 1, 1, 1, 3);
    Tensor w = Tensor.of(new float[] {1, 1, 1}, 1, 1, 1, 1, 3);
    Tensor out =
        cpu.conv3d(x, w, Tensor.of(new float[] {1}, 1), new int[] {1, 1, 1}, new int[] {0, 0, 1});
    assertArrayEquals(new float[] {4, 7, 6}, out.toFloatArray());
  }

  @Test
  void norms() {
    Tensor x = Tensor.of(new float[] {1, 3}, 1, 2);
    assertArrayEquals(new float[] {-1, 1}, cpu.layerNorm(x, null, null, 0f).toFloatArray(), 1e-6f);
    float rms = (float) Math.sqrt(5);
    assertArrayEquals(
        new float[] {1 / rms, 3 / rms * 2},
        cpu.rmsNorm(x, Tensor.of(new float[] {1, 2}, 2), 0f).toFloatArray(),
        1e-6f);
    Tensor col = Tensor.of(new float[] {3, 0, 4, 0}, 2, 2);
    assertArrayEquals(
        new float[] {0.6f, 0, 0.8f, 0}, cpu.l2Normalize(col, 0, 1e-12f).toFloatArray(), 1e-6f);
    assertArrayEquals(
        new float[] {0.25f, 0.75f},
        cpu.softmax(Tensor.of(new float[] {0, (float) Math.log(3)}, 2)).toFloatArray(),
        1e-6f);
  }

  @Test
  void activations() {
    Tensor x = Tensor.of(new float[] {-1, 0, 2}, 3);
    assertArrayEquals(
        new float[] {-0.15865525f, 0, 1.9544997f}, cpu.gelu(x, false).toFloatArray(), 1e-6f);
    assertArrayEquals(
        new float[] {-0.15880801f, 0, 1.9545977f}, cpu.gelu(x, true).toFloatArray(), 1e-6f);
    assertArrayEquals(new float[] {-0.26894142f, 0, 1.7615942f}, cpu.silu(x).toFloatArray(), 1e-6f);
    assertArrayEquals(new float[] {0, 0, 2}, cpu.unary(x, UnaryOp.RELU).toFloatArray());
    assertArrayEquals(new float[] {-1, 1, 5}, cpu.affine(x, 2, 1).toFloatArray());
    assertArrayEquals(new float[] {-0.5f, 0, 0.5f}, cpu.clamp(x, -0.5f, 0.5f).toFloatArray());
  }

  @Test
  void binaryBroadcastsLikeNumpy() {
    Tensor a = Tensor.of(new float[] {1, 2, 3}, 3, 1);
    Tensor b = Tensor.of(new float[] {10, 20}, 2);
    Tensor c = cpu.binary(a, b, BinaryOp.ADD);
    assertArrayEquals(new int[] {3, 2}, c.shape());
    assertArrayEquals(new float[] {11, 21, 12, 22, 13, 23}, c.toFloatArray());
    assertThrows(
        IllegalArgumentException.class,
        () -> cpu.add(Tensor.zeros(DType.F32, 3), Tensor.zeros(DType.F32, 2)));
  }

  @Test
  void ropeRotatesPairs() {
    Tensor x = Tensor.of(new float[] {1, 0}, 1, 1, 1, 2);
    Tensor out = cpu.rope(x, Tensor.of(new float[] {0}, 1, 1), Tensor.of(new float[] {1}, 1, 1));
    assertArrayEquals(new float[] {0, 1}, out.toFloatArray());
  }

  @Test
  void shapeOps() {
    Tensor a = Tensor.of(new float[] {1, 2}, 1, 2);
    Tensor b = Tensor.of(new float[] {3, 4, 5, 6}, 2, 2);
    assertArrayEquals(new float[] {1, 2, 3, 4, 5, 6}, cpu.concat(List.of(a, b), 0).toFloatArray());
    assertArrayEquals(
        new float[] {1, 2, 3, 4, 5, 6},
        cpu.concat(List.of(a.transpose(0, 1), b.transpose(0, 1)), 1)
            .transpose(0, 1)
            .toFloatArray());
    assertArrayEquals(new float[] {9, 1, 2, 9, 9}, cpu.pad(a, new int[] {1, 2}, 9).toFloatArray());
    assertArrayEquals(
        new float[] {1, 1, 2, 2, 1, 1, 2, 2}, cpu.upsampleNearest2d(a, 2, 2).toFloatArray());
    Tensor table = Tensor.of(new float[] {0, 1, 10, 11, 20, 21}, 3, 2);
    assertArrayEquals(
        new float[] {20, 21, 0, 1},
        cpu.embedding(table, Tensor.ofLongs(new long[] {2, 0}, 2)).toFloatArray());
    assertArrayEquals(new float[] {7, 11}, cpu.sumLastDim(b).toFloatArray());
  }

  @Test
  void uploadConvertsAndDownloadWidens() {
    Tensor x = Tensor.of(new float[] {1.5f, -2f}, 2);
    Tensor bf = cpu.upload(x, DType.BF16);
    assertEquals(DType.BF16, bf.dtype());
    Tensor back = cpu.download(bf);
    assertEquals(DType.F32, back.dtype());
    assertArrayEquals(new float[] {1.5f, -2f}, back.toFloatArray());
    assertArrayEquals(new float[] {3.75f, 2}, cpu.add(cpu.mul(bf, bf), x).toFloatArray());
  }

  @Test
  void downloadIntoFillsATensorMadeAheadAndRefusesAnotherShapeOrType() {
    Tensor view = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3).transpose(0, 1);
    Tensor into = Tensor.zeros(DType.F32, 3, 2);
    cpu.downloadInto(view, into);
    assertArrayEquals(new float[] {1, 4, 2, 5, 3, 6}, into.toFloatArray());
    for (Tensor bad :
        new Tensor[] {
          Tensor.zeros(DType.F32, 2, 3), // another shape
          Tensor.zeros(DType.BF16, 3, 2), // another dtype
          Tensor.zeros(DType.F32, 2, 3).transpose(0, 1) // not contiguous
        }) {
      var e = assertThrows(IllegalArgumentException.class, () -> cpu.downloadInto(view, bad));
      assertEquals(
          "downloadInto needs a contiguous F32 CPU tensor of shape [3, 2], got " + bad,
          e.getMessage());
    }
  }

  @Test
  void addIntoAndCopyIntoWriteThroughTheTargetsStridesAndTouchNothingElse() {
    // A [3, 4] buffer; the target is its transposed middle columns, [2, 3] with strides (1, 4).
    Tensor buffer = Tensor.of(new float[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 3, 4);
    Tensor target = buffer.slice(1, 1, 3).transpose(0, 1);
    // The value itself a strided view (a transpose), as the backward's gradients often are.
    Tensor value = Tensor.of(new float[] {100, 200, 300, 400, 500, 600}, 3, 2).transpose(0, 1);
    cpu.addInto(target, value);
    assertArrayEquals(
        new float[] {0, 101, 202, 3, 4, 305, 406, 7, 8, 509, 610, 11}, buffer.toFloatArray());
    // copyInto overwrites the same elements.
    cpu.copyInto(target, value);
    assertArrayEquals(
        new float[] {0, 100, 200, 3, 4, 300, 400, 7, 8, 500, 600, 11}, buffer.toFloatArray());
  }

  @Test
  void addIntoRefusesWhatWouldRaceOrMisaddress() {
    Tensor buffer = Tensor.zeros(DType.F32, 4);
    // A broadcast target would add several values into one element: the caller sums first.
    IllegalArgumentException broadcast =
        assertThrows(
            IllegalArgumentException.class,
            () -> cpu.addInto(buffer.slice(0, 0, 1).expand(3), Tensor.zeros(DType.F32, 3)));
    assertTrue(broadcast.getMessage().contains("repeats elements along dimension 0"));
    IllegalArgumentException shape =
        assertThrows(
            IllegalArgumentException.class,
            () -> cpu.addInto(buffer, Tensor.zeros(DType.F32, 2, 2)));
    assertTrue(shape.getMessage().contains("a value of shape [2, 2] for a target of shape [4]"));
    IllegalArgumentException dtype =
        assertThrows(
            IllegalArgumentException.class,
            () -> cpu.addInto(Tensor.zeros(DType.BF16, 4), Tensor.zeros(DType.F32, 4)));
    assertTrue(dtype.getMessage().contains("needs an F32 target"));
    assertArrayEquals(new float[4], buffer.toFloatArray());
  }
}

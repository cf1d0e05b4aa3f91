package dev.stepweave.tensor.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The Backend SPI's fused operations and lifetime hooks on the CPU: each fused default is
 * bit-identical to the composition the Wan model used before it existed, and the lifetime hooks
 * only run their bodies.
 */
class FusedDefaultsTest {
  private final CpuBackend cpu = new CpuBackend(2);
  private final SplittableRandom random = new SplittableRandom(7);

  private Tensor rand(int... shape) {
    float[] v = new float[Math.toIntExact(Tensor.numel(shape))];
    for (int i = 0; i < v.length; i++) {
      v[i] = (float) (random.nextDouble() * 4 - 2);
    }
    return Tensor.of(v, shape);
  }

  /** Per-sample modulation vectors as the model makes them: [B, 1, D] slices of [B, 6, D]. */
  private Tensor vector(Tensor table, int i) {
    return table.slice(1, i, i + 1);
  }

  @Test
  void modulatedLayerNormIsTheAdaptiveNormComposition() {
    Tensor x = rand(2, 7, 24);
    Tensor table = rand(2, 6, 24);
    Tensor shift = vector(table, 0), scale = vector(table, 1);
    Tensor composed =
        cpu.add(cpu.mul(cpu.layerNorm(x, null, null, 1e-6f), cpu.affine(scale, 1f, 1f)), shift);
    Tensor fused = cpu.modulatedLayerNorm(x, shift, scale, 1e-6f);
    assertArrayEquals(composed.shape(), fused.shape());
    assertArrayEquals(composed.toFloatArray(), fused.toFloatArray());
  }

  /**
   * The defaults keep a BF16 activation BF16 as the fused kernels do: an F32 modulation or gate
   * promotes the composition to F32, which would leave a trainer's BF16 forward (which runs these
   * defaults) in F32 from the first block on. The values are the composition's, rounded once.
   */
  @Test
  void theDefaultsGiveBackTheActivationsDType() {
    Tensor x = cpu.upload(rand(2, 7, 24), DType.BF16), y = cpu.upload(rand(2, 7, 24), DType.BF16);
    Tensor table = rand(2, 6, 24);
    Tensor shift = vector(table, 0), scale = vector(table, 1), gate = vector(table, 2);
    Tensor normed = cpu.modulatedLayerNorm(x, shift, scale, 1e-6f);
    Tensor gated = cpu.gatedResidual(x, y, gate);
    assertEquals(DType.BF16, normed.dtype());
    assertEquals(DType.BF16, gated.dtype());
    Tensor composed =
        cpu.add(cpu.mul(cpu.layerNorm(x, null, null, 1e-6f), cpu.affine(scale, 1f, 1f)), shift);
    assertArrayEquals(
        cpu.upload(composed, DType.BF16).toFloatArray(), normed.toFloatArray(), "normed");
    assertArrayEquals(
        cpu.upload(cpu.add(x, cpu.mul(y, gate)), DType.BF16).toFloatArray(),
        gated.toFloatArray(),
        "gated");
    assertEquals(DType.F32, cpu.gatedResidual(rand(2, 7, 24), rand(2, 7, 24), gate).dtype());
  }

  @Test
  void residualNormsAreTheUpdateThenTheNorm() {
    Tensor x = rand(2, 7, 24), y = rand(2, 7, 24), w = rand(24), b = rand(24);
    Tensor table = rand(2, 6, 24);
    Tensor gate = vector(table, 2), shift = vector(table, 3), scale = vector(table, 4);
    var affine = cpu.residualLayerNorm(x, y, gate, w, b, 1e-6f);
    Tensor gated = cpu.gatedResidual(x, y, gate);
    assertArrayEquals(gated.toFloatArray(), affine.residual().toFloatArray());
    assertArrayEquals(
        cpu.layerNorm(gated, w, b, 1e-6f).toFloatArray(), affine.normed().toFloatArray());
    var modulated = cpu.residualModulatedLayerNorm(x, y, null, shift, scale, 1e-6f);
    Tensor added = cpu.add(x, y);
    assertArrayEquals(added.toFloatArray(), modulated.residual().toFloatArray());
    assertArrayEquals(
        cpu.modulatedLayerNorm(added, shift, scale, 1e-6f).toFloatArray(),
        modulated.normed().toFloatArray());
  }

  @Test
  void linearStackedIsEachLinearAndRefusesMismatchedStacks() {
    Tensor x = rand(2, 5, 8), w = rand(3, 6, 8), bias = rand(3, 6);
    List<Tensor> out = cpu.linearStacked(x, w, bias);
    assertEquals(3, out.size());
    for (int i = 0; i < 3; i++) {
      assertArrayEquals(
          cpu.linear(x, w.select(0, i), bias.select(0, i)).toFloatArray(),
          out.get(i).toFloatArray(),
          "layer " + i);
    }
    IllegalArgumentException twoBiases =
        assertThrows(
            IllegalArgumentException.class, () -> cpu.linearStacked(x, w, bias.slice(0, 0, 2)));
    assertEquals(
        "stacked linear weights must be [G, out, in] with bias [G, out], got "
            + w
            + ", "
            + bias.slice(0, 0, 2),
        twoBiases.getMessage());
    assertThrows(IllegalArgumentException.class, () -> cpu.linearStacked(x, w.select(0, 0), null));
    assertThrows(IllegalArgumentException.class, () -> cpu.linearStacked(rand(2, 5, 7), w, bias));
  }

  @Test
  void rmsNormRopeIsRopeOfTheNormAcrossHeads() {
    Tensor x = rand(2, 5, 24), w = rand(24), cos = rand(5, 4), sin = rand(5, 4);
    Tensor composed = cpu.rope(cpu.rmsNorm(x, w, 1e-6f).reshape(2, 5, 3, 8), cos, sin);
    Tensor fused = cpu.rmsNormRope(x, w, 1e-6f, 3, cos, sin);
    assertArrayEquals(composed.shape(), fused.shape());
    assertArrayEquals(composed.toFloatArray(), fused.toFloatArray());
  }

  @Test
  void gatedResidualIsAddOfTheGatedUpdate() {
    Tensor x = rand(2, 7, 24), y = rand(2, 7, 24);
    Tensor gate = vector(rand(2, 6, 24), 2);
    Tensor composed = cpu.add(x, cpu.mul(y, gate));
    assertArrayEquals(composed.toFloatArray(), cpu.gatedResidual(x, y, gate).toFloatArray());
  }

  @Test
  void linearGeluTanhIsGeluOfTheLinear() {
    Tensor x = rand(3, 5, 16), w = rand(12, 16), b = rand(12);
    Tensor composed = cpu.gelu(cpu.linear(x, w, b), true);
    assertArrayEquals(composed.toFloatArray(), cpu.linearGeluTanh(x, w, b).toFloatArray());
    assertArrayEquals(
        cpu.gelu(cpu.linear(x, w, null), true).toFloatArray(),
        cpu.linearGeluTanh(x, w, null).toFloatArray());
  }

  @Test
  void activationsAreF32AndLifetimeHooksOnlyRunTheirBodies() {
    assertEquals(DType.F32, cpu.activationDType());
    Tensor x = rand(4, 3);
    Tensor[] made = new Tensor[1];
    Tensor out =
        cpu.scoped(
            () -> {
              made[0] = cpu.affine(x, 2f, 1f);
              return made[0];
            });
    assertSame(made[0], out);

    List<Integer> order = new ArrayList<>();
    Tensor chained =
        cpu.chain(
            x,
            2,
            5,
            (i, h) -> {
              order.add(i);
              return cpu.affine(h, 1f, i);
            });
    assertEquals(List.of(2, 3, 4), order);
    assertArrayEquals(cpu.affine(x, 1f, 9f).toFloatArray(), chained.toFloatArray(), 1e-6f);
    assertSame(x, cpu.chain(x, 3, 3, (i, h) -> cpu.affine(h, 2f, 0f)));
    Tensor kept =
        cpu.chain(x, 2, 5, (i, h) -> cpu.affine(h, 1f, i), () -> List.of(made[0], chained));
    assertArrayEquals(chained.toFloatArray(), kept.toFloatArray());

    List<String> ran = new ArrayList<>();
    Backend.StepMemory memory = cpu.stepMemory();
    memory.step(() -> ran.add("first"), List::of);
    memory.step(() -> ran.add("second"), () -> List.of(x));
    assertEquals(List.of("first", "second"), ran);
  }
}

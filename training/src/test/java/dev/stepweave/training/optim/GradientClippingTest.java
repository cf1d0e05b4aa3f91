package dev.stepweave.training.optim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Clipping by the global norm over all gradients together, as torch's clip_grad_norm_. */
class GradientClippingTest {
  private static final CpuBackend HOST = new CpuBackend(1);

  private static Map<String, Tensor> grads() {
    Map<String, Tensor> g = new LinkedHashMap<>();
    g.put("a", Tensor.of(new float[] {3f, 0f}, 2));
    g.put("b", Tensor.of(new float[] {4f}, 1));
    return g;
  }

  @Test
  void aNormAboveTheLimitScalesEveryGradient() {
    GradientClipping.Clipped c = GradientClipping.byGlobalNorm(grads(), 1.0, HOST);
    assertEquals(5.0, c.totalNorm(), 1e-12);
    float k = (float) (1.0 / (5.0 + 1e-6));
    assertArrayEquals(new float[] {3f * k, 0f}, c.gradients().get("a").toFloatArray(), 1e-7f);
    assertArrayEquals(new float[] {4f * k}, c.gradients().get("b").toFloatArray(), 1e-7f);
  }

  @Test
  void aNormWithinTheLimitLeavesThemAlone() {
    GradientClipping.Clipped c = GradientClipping.byGlobalNorm(grads(), 10.0, HOST);
    assertArrayEquals(new float[] {3f, 0f}, c.gradients().get("a").toFloatArray());
    var e =
        assertThrows(
            IllegalArgumentException.class, () -> GradientClipping.byGlobalNorm(grads(), 0, HOST));
    assertEquals("max gradient norm must be > 0, not 0.0", e.getMessage());
  }
}

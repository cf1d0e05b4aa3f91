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
  void aNormAboveTheLimitScalesEveryGradientAndOneWithinItLeavesThemAlone() {
    double norm = GradientClipping.globalNorm(grads(), HOST);
    assertEquals(5.0, norm, 1e-12);
    assertEquals(1.0 / (5.0 + 1e-6), GradientClipping.coefficient(norm, 1.0), 0);
    assertEquals(1.0, GradientClipping.coefficient(norm, 10.0), 0);
    var e =
        assertThrows(IllegalArgumentException.class, () -> GradientClipping.coefficient(norm, 0));
    assertEquals("max gradient norm must be > 0, not 0.0", e.getMessage());
  }

  /** A clipped step is the step of the gradients scaled in double, each element rounded once. */
  @Test
  void aClippedStepIsTheStepOfTheScaledGradients() {
    double k = GradientClipping.coefficient(5.0, 1.0);
    Map<String, Tensor> scaled = new LinkedHashMap<>();
    grads().forEach((name, g) -> scaled.put(name, GradientClipping.scaledOnHost(g, k)));
    assertArrayEquals(
        new float[] {(float) (3 * k), 0f}, scaled.get("a").toFloatArray(), 0f, "scaled once");
    Map<String, Tensor> clipped = parameters(), plain = parameters();
    AdamW.Settings settings = AdamW.Settings.torchDefaults();
    new AdamW(settings).step(clipped, grads(), 1e-2, k);
    new AdamW(settings).step(plain, scaled, 1e-2);
    clipped.forEach(
        (name, p) -> assertArrayEquals(plain.get(name).toFloatArray(), p.toFloatArray(), name));
  }

  private static Map<String, Tensor> parameters() {
    Map<String, Tensor> p = new LinkedHashMap<>();
    p.put("a", Tensor.of(new float[] {0.5f, -0.25f}, 2));
    p.put("b", Tensor.of(new float[] {1f}, 1));
    return p;
  }
}

package dev.stepweave.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import org.junit.jupiter.api.Test;

/** Batched outputs against one-at-a-time outputs: what is measured and what passes. */
class OutputReferenceTest {
  private static final Tensor PIXELS = Tensor.of(new float[] {0.1f, 0.5f, 0.9f, 0.3f}, 4);

  private static Tensor scaled(float factor) {
    float[] v = PIXELS.toFloatArray();
    for (int i = 0; i < v.length; i++) {
      v[i] *= factor;
    }
    return Tensor.of(v, v.length);
  }

  @Test
  void theFirstOneAtATimeOutputIsTheReferenceAndLaterOnesAreMeasuredAgainstIt() {
    OutputReference ref = new OutputReference();
    assertEquals(Deviation.NONE, ref.compare(ServingMode.SERIAL, "a", PIXELS));

    Deviation same = ref.compare(ServingMode.STEP_LEVEL, "a", scaled(1));
    assertTrue(same.bitIdentical());
    assertEquals(0, same.relativeL2());

    // Every value 2 % off: relative L2 0.02, over the device bound.
    Deviation off = ref.compare(ServingMode.REQUEST_LEVEL, "a", scaled(1.02f));
    assertFalse(off.bitIdentical());
    assertEquals(0.02, off.relativeL2(), 1e-6);
    // A second one-at-a-time run is compared too, not taken as a new reference.
    assertFalse(ref.compare(ServingMode.SERIAL, "a", scaled(1.02f)).bitIdentical());
  }

  @Test
  void aBatchedOutputWithNoOneAtATimeOutputBeforeItIsAnError() {
    var e =
        assertThrows(
            IllegalStateException.class,
            () -> new OutputReference().compare(ServingMode.STEP_LEVEL, "b", PIXELS));
    assertEquals(
        "request b was served with step-level batching before one at a time", e.getMessage());
  }

  @Test
  void theCpuDemandsBitIdentityAndADeviceTheBf16Bound() {
    assertEquals(OutputCheck.BIT_IDENTICAL, OutputCheck.forBackend(new CpuBackend()));
    Deviation close = new Deviation(false, 5e-3);
    assertFalse(OutputCheck.BIT_IDENTICAL.accepts(close));
    assertTrue(OutputCheck.WITHIN_BOUND.accepts(close));
    assertFalse(OutputCheck.WITHIN_BOUND.accepts(new Deviation(false, 2e-2)));
    assertTrue(OutputCheck.BIT_IDENTICAL.accepts(Deviation.NONE));
    // Another shape, or a value that is not finite, is no match at all.
    Deviation shape = Deviation.between(Tensor.of(new float[] {0.1f, 0.5f}, 2), PIXELS);
    Deviation nan =
        Deviation.between(Tensor.of(new float[] {0.1f, 0.5f, Float.NaN, 0.3f}, 4), PIXELS);
    for (Deviation d : new Deviation[] {shape, nan}) {
      assertTrue(Double.isNaN(d.relativeL2()));
      assertFalse(OutputCheck.WITHIN_BOUND.accepts(d));
      assertFalse(OutputCheck.BIT_IDENTICAL.accepts(d));
    }
  }
}

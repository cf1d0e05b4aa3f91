package dev.stepweave.models.wan.cache;

import dev.stepweave.core.extend.PluginSlot;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;

/**
 * A cached tensor and its finite-difference derivatives over steps, kept in a plugin slot ({@code
 * d0..d2} and {@code computed_step}), so a cache can reuse it as is (order 0) or extrapolate it to
 * a later step TaylorSeer-style (order 1–2).
 */
final class TaylorSeries {
  private TaylorSeries() {}

  static boolean isEmpty(PluginSlot slot) {
    return slot.tensor("d0") == null;
  }

  /** The value at {@code step}: the cached one, or its Taylor extrapolation up to {@code order}. */
  static Tensor predict(Backend ops, PluginSlot slot, int order, int step) {
    Tensor r = slot.tensor("d0");
    float dt = (float) (step - slot.number("computed_step"));
    if (order >= 1 && slot.tensor("d1") != null) {
      r = ops.add(r, ops.affine(slot.tensor("d1"), dt, 0f));
    }
    if (order >= 2 && slot.tensor("d2") != null) {
      r = ops.add(r, ops.affine(slot.tensor("d2"), dt * dt / 2f, 0f));
    }
    return r;
  }

  /** Stores the value computed at {@code step} and updates the derivatives up to {@code order}. */
  static void remember(Backend ops, PluginSlot slot, int order, Tensor value, int step) {
    Tensor previous = slot.tensor("d0");
    if (order >= 1 && previous != null) {
      float inv = (float) (1.0 / (step - slot.number("computed_step")));
      Tensor d1 = ops.affine(ops.sub(value, previous), inv, 0f);
      Tensor previousD1 = slot.tensor("d1");
      if (order >= 2 && previousD1 != null) {
        slot.put("d2", ops.affine(ops.sub(d1, previousD1), inv, 0f));
      }
      slot.put("d1", d1);
    }
    slot.put("d0", value);
    slot.put("computed_step", step);
  }
}

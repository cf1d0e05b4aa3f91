package dev.stepweave.cli.bench;

import dev.stepweave.core.parity.Tolerance;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Device;

/** What a request's batched pixels must be to its one-at-a-time pixels, by backend. */
public enum OutputCheck {
  /** Bit for bit: the CPU backend is batch-invariant (docs/scheduler.md, "Batching"). */
  BIT_IDENTICAL,
  /**
   * Within {@link #DEVICE_BOUND}: on a device, a GEMM may take another algorithm for a larger
   * batch, so batching is C2-style rather than bit-exact (docs/cuda.md, "Consistency rung").
   */
  WITHIN_BOUND;

  /** The bound BF16 paths are held to (golden README, "Tolerances"; BatchConsistencyGpuTest). */
  public static final Tolerance.RelativeL2 DEVICE_BOUND = new Tolerance.RelativeL2(1e-2);

  public static OutputCheck forBackend(Backend backend) {
    return backend.device().kind() == Device.Kind.CPU ? BIT_IDENTICAL : WITHIN_BOUND;
  }

  public boolean accepts(Deviation d) {
    return this == BIT_IDENTICAL
        ? d.bitIdentical()
        : DEVICE_BOUND.accepts(Double.NaN, d.relativeL2());
  }

  /** What it demands, for the report: {@code bit-identical}, {@code within relative L2 0.01}. */
  public String describe() {
    return this == BIT_IDENTICAL ? "bit-identical" : "within relative L2 " + DEVICE_BOUND.bound();
  }
}

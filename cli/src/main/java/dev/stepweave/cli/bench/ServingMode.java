package dev.stepweave.cli.bench;

import dev.stepweave.core.runtime.EngineConfig;
import dev.stepweave.core.runtime.EngineConfig.Admission;

/** How the engine serves a workload: the three configurations the benchmark compares. */
public enum ServingMode {
  /** One running request, one unit per call: serving one request at a time, in arrival order. */
  SERIAL("one at a time"),
  /**
   * Request-level batching: on an idle engine, waiting requests of one shape start together, at
   * most one batch of them, and run to the end; later arrivals wait ({@link
   * Admission#SHAPE_GROUPS_WHEN_IDLE}).
   */
  REQUEST_LEVEL("request-level batching"),
  /** Step-level batching: requests start whenever they fit, and equal steps share calls. */
  STEP_LEVEL("step-level batching");

  private final String label;

  ServingMode(String label) {
    this.label = label;
  }

  public String label() {
    return label;
  }

  /**
   * The engine configuration of this mode: {@code base} (budgets, device rates) with this mode's
   * admission, and for the batching modes {@code maxBatch} running requests and units per call.
   */
  public EngineConfig config(EngineConfig base, int maxBatch) {
    EngineConfig.Builder b = base.toBuilder().admission(Admission.CONTINUOUS);
    return switch (this) {
      case SERIAL -> b.maxRunning(1).maxBatchSize(1).build();
      case REQUEST_LEVEL ->
          b.maxRunning(maxBatch)
              .maxBatchSize(maxBatch)
              .admission(Admission.SHAPE_GROUPS_WHEN_IDLE)
              .build();
      case STEP_LEVEL -> b.maxRunning(maxBatch).maxBatchSize(maxBatch).build();
    };
  }
}

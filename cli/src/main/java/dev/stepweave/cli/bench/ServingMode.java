package dev.stepweave.cli.bench;

import dev.stepweave.core.runtime.EngineConfig;

/** How the engine serves a workload: the two configurations the benchmark compares. */
public enum ServingMode {
  /** The engine's defaults: several running requests, their steps batched across requests. */
  BATCHED("step-level batching", EngineConfig.defaults()),
  /** One running request, one unit per call: serving one request at a time, in arrival order. */
  SERIAL("one at a time", EngineConfig.builder().maxRunning(1).maxBatchSize(1).build());

  private final String label;
  private final EngineConfig config;

  ServingMode(String label, EngineConfig config) {
    this.label = label;
    this.config = config;
  }

  public String label() {
    return label;
  }

  public EngineConfig config() {
    return config;
  }
}

package dev.stepweave.cli;

import dev.stepweave.core.loop.ModelInstance;
import dev.stepweave.core.memory.MemoryBudget;
import dev.stepweave.core.runtime.EngineConfig;
import java.io.PrintWriter;
import java.util.Optional;
import java.util.OptionalLong;
import picocli.CommandLine.Option;

/**
 * The {@code --memory-headroom} option of the commands that run requests through an engine, and the
 * memory budget it gives on a device (docs/scheduler.md, "Admission").
 */
final class DeviceBudget {
  @Option(
      names = "--memory-headroom",
      paramLabel = "GIB",
      description =
          "On CUDA: device memory kept out of the admission budget, in GiB (default: 10%% of the"
              + " device). Requests may reserve the device's memory less the weights, less what"
              + " was in use outside Stepweave at start, less this.")
  Double headroomGib;

  /**
   * {@code config} with the memory budget and the measured rates of {@code model}'s device, each
   * after one line saying how it was made; on the CPU, {@code config} as it is.
   */
  EngineConfig apply(EngineConfig config, ModelInstance model, PrintWriter err) {
    Optional<MemoryBudget> budget = MemoryBudget.measure(model, headroom());
    budget.ifPresent(
        b -> {
          err.println(b.describe());
          err.flush();
        });
    EngineConfig.Builder out = config.toBuilder();
    budget.ifPresent(b -> out.memoryBudgetBytes(b.requestBytes()));
    model
        .backend()
        .deviceRates()
        .ifPresent(
            r -> {
              err.println("cost model seeded with the device's rates: " + r.how());
              err.flush();
              out.deviceFlopsPerMilli(r.flopsPerMilli()).deviceBytesPerMilli(r.bytesPerMilli());
            });
    return out.build();
  }

  /** Fails on a bad option value, before anything slow (loading the model) starts. */
  void check() {
    headroom();
  }

  private OptionalLong headroom() {
    if (headroomGib == null) {
      return OptionalLong.empty();
    }
    if (!(headroomGib >= 0) || headroomGib.isInfinite()) {
      throw new IllegalArgumentException(
          "--memory-headroom must be a non-negative number of GiB, got " + headroomGib);
    }
    return OptionalLong.of((long) (headroomGib * (1L << 30)));
  }
}

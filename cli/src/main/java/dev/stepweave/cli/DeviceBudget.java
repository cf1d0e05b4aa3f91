package dev.stepweave.cli;

import dev.stepweave.core.memory.MemoryBudget;
import dev.stepweave.core.runtime.EngineConfig;
import dev.stepweave.models.wan.ExpertResidency;
import dev.stepweave.models.wan.WanLoadOptions;
import dev.stepweave.models.wan.WanModel;
import java.io.PrintWriter;
import java.util.Optional;
import java.util.OptionalLong;
import picocli.CommandLine.Option;

/**
 * The device-memory options of the commands that run requests through an engine — {@code
 * --memory-headroom} and {@code --experts} —, how they load the model, and the memory budget they
 * give on a device (docs/scheduler.md, "Admission" and "Two experts on a small device").
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

  @Option(
      names = "--experts",
      defaultValue = "auto",
      paramLabel = "POLICY",
      description =
          "Two-expert checkpoints (Wan2.2 A14B): resident (both experts on the device), swap (one"
              + " awake at a time, the other parked in host memory; a switch costs about 18 s for"
              + " a 14B expert, and steps are ordered to switch rarely) or auto (swap only when the"
              + " device cannot hold both experts, the other weights and the model's default"
              + " request; the default).")
  String experts = "auto";

  /** How the model loads: its experts' residency, and the headroom {@code auto} keeps out. */
  WanLoadOptions loadOptions() {
    return new WanLoadOptions(ExpertResidency.parse(experts), headroom());
  }

  /**
   * {@code config} with the memory budget and the measured rates of {@code model}'s device, each
   * after one line saying how it was made (and, with two experts, how they share the device); on
   * the CPU, {@code config} as it is.
   */
  EngineConfig apply(EngineConfig config, WanModel model, PrintWriter err) {
    if (model.expertIds().size() > 1) {
      err.println("experts: " + model.expertChoice().describe());
      err.flush();
    }
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
    loadOptions();
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

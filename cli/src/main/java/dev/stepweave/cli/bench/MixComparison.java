package dev.stepweave.cli.bench;

import dev.stepweave.core.loop.ModelInstance;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

/** One workload served both ways, in the same run. */
public record MixComparison(Workload workload, ModeSummary serial, ModeSummary batched) {

  /**
   * Serves the workload {@code rounds} times each way, each on a fresh engine, alternating which
   * way goes first so that drift in the machine's load falls on both.
   */
  public static MixComparison measure(
      ModelInstance model, Workload workload, int rounds, int concurrency)
      throws InterruptedException {
    List<RunResult> serial = new ArrayList<>();
    List<RunResult> batched = new ArrayList<>();
    for (int round = 0; round < rounds; round++) {
      List<ServingMode> order =
          round % 2 == 0
              ? List.of(ServingMode.SERIAL, ServingMode.BATCHED)
              : List.of(ServingMode.BATCHED, ServingMode.SERIAL);
      for (ServingMode mode : order) {
        RunResult r = ServingRun.serve(model, mode, workload.requests(), concurrency);
        (mode == ServingMode.SERIAL ? serial : batched).add(r);
      }
    }
    return new MixComparison(
        workload,
        new ModeSummary(ServingMode.SERIAL, serial),
        new ModeSummary(ServingMode.BATCHED, batched));
  }

  /**
   * Requests whose output is the same, bit for bit, in every round of both modes (the first
   * one-at-a-time round is the reference).
   */
  public int identicalOutputs() {
    var reference = serial.runs().getFirst().outputs();
    int same = 0;
    for (int i = 0; i < reference.size(); i++) {
      float[] expected = reference.get(i);
      int request = i;
      if (Stream.concat(serial.runs().stream(), batched.runs().stream())
          .allMatch(r -> Arrays.equals(expected, r.outputs().get(request)))) {
        same++;
      }
    }
    return same;
  }

  public boolean allIdentical() {
    return identicalOutputs() == workload.requests().size();
  }

  public double throughputGain() {
    return batched.requestsPerSecond() / serial.requestsPerSecond();
  }
}

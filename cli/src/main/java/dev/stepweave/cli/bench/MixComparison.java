package dev.stepweave.cli.bench;

import java.util.Arrays;
import java.util.stream.Stream;

/** One workload served both ways, in the same run. */
public record MixComparison(Workload workload, ModeSummary serial, ModeSummary batched) {

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

package dev.stepweave.cli.bench;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Serving one workload both ways: what is measured and counted (nothing here is timed). */
class BenchServingRunTest {
  static final Path TINY = Path.of(System.getProperty("stepweave.golden"), "wan21-tiny");
  private static WanModel model;

  @BeforeAll
  static void load() {
    model = WanModel.load(TINY, new CpuBackend());
  }

  @AfterAll
  static void close() {
    model.close();
  }

  /** Three images of one size, so their steps may share transformer calls. */
  private static List<Request> threeImages() {
    return List.of(
        image("a", "a red ball", 1, 3), image("b", "a blue cube", 2, 2), image("c", "a cat", 3, 3));
  }

  private static Request image(String id, String prompt, long seed, int steps) {
    return Request.builder(
            TaskType.T2I,
            new DiffusionParams(
                steps, 5.0, seed, 32, 32, 1, 8, "", Optional.empty(), Optional.empty()))
        .id(id)
        .prompt(prompt)
        .build();
  }

  @Test
  void batchingSharesTransformerCallsAndChangesNoOutput() throws Exception {
    List<Request> requests = threeImages();
    RunResult serial = ServingRun.serve(model, ServingMode.SERIAL, requests, requests.size());
    RunResult batched = ServingRun.serve(model, ServingMode.BATCHED, requests, requests.size());
    int steps = 3 + 2 + 3;

    var one = new ModeSummary(ServingMode.SERIAL, List.of(serial));
    var many = new ModeSummary(ServingMode.BATCHED, List.of(batched));
    assertEquals(steps, one.callsPerRound(WorkKind.DIFFUSION_STEP));
    assertEquals("1:" + serial.stats().batchSizes().count(), one.batchSizeHistogram());
    // All three share a shape and overlap in time, so some of their steps go as one call. How
    // many depends on the tick at which each is admitted, so only "some" is asserted.
    assertTrue(many.callsPerRound(WorkKind.DIFFUSION_STEP) < steps, many.toString());
    assertTrue(
        many.batchSizeHistogram().matches(".*\\b(2|3-4):[1-9].*"), many.batchSizeHistogram());

    for (int i = 0; i < requests.size(); i++) {
      assertArrayEquals(serial.outputs().get(i), batched.outputs().get(i), requests.get(i).id());
      assertTrue(serial.outputs().get(i).length > 0);
    }
    for (RunResult r : List.of(serial, batched)) {
      assertEquals(3, r.latencies().size());
      assertEquals(3, r.stats().completed());
      Duration longest = r.latencies().stream().max(Duration::compareTo).orElseThrow();
      assertTrue(longest.compareTo(r.wall()) <= 0, r.wall() + " < " + longest);
    }
  }

  @Test
  void aClosedLoopOfOneClientServesTheRequestsOneAfterAnother() throws Exception {
    List<Request> requests = threeImages();
    RunResult r = ServingRun.serve(model, ServingMode.BATCHED, requests, 1);
    // With one request outstanding at a time there is never anyone to batch with.
    assertEquals(
        "1:" + r.stats().batchSizes().count(),
        new ModeSummary(ServingMode.BATCHED, List.of(r)).batchSizeHistogram());
    Duration sum = r.latencies().stream().reduce(Duration.ZERO, Duration::plus);
    assertTrue(sum.compareTo(r.wall()) <= 0, "latencies " + sum + " within wall " + r.wall());
  }

  @Test
  void percentilesAreNearestRank() {
    var s =
        new ModeSummary(
            ServingMode.SERIAL,
            List.of(
                new RunResult(
                    ServingMode.SERIAL,
                    Duration.ofSeconds(10),
                    List.of(4, 1, 3, 2, 5, 6, 7, 8, 9, 10).stream()
                        .map(Duration::ofSeconds)
                        .toList(),
                    List.of(),
                    null)));
    assertEquals(5.0, s.latencyPercentile(0.5));
    assertEquals(10.0, s.latencyPercentile(0.95));
    assertEquals(1.0, s.latencyPercentile(0.0));
    assertEquals(1.0, s.requestsPerSecond());
  }
}

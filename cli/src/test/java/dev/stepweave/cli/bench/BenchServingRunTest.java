package dev.stepweave.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.EngineConfig;
import dev.stepweave.core.runtime.RequestHandle;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Serving one workload in each mode: what is measured and counted (nothing here is timed). */
class BenchServingRunTest {
  static final Path TINY = Path.of(System.getProperty("stepweave.golden"), "wan21-tiny");
  private static WanModel model;
  private static ServingRun runner;

  @BeforeAll
  static void load() {
    model = WanModel.load(TINY, new CpuBackend());
    runner = new ServingRun(model, EngineConfig.defaults(), 8);
  }

  @AfterAll
  static void close() {
    model.close();
  }

  /** Three images of one size, so their steps may share transformer calls. */
  private static List<Request> threeImages() {
    return List.of(
        image("a", "a red ball", 1, 3, 32),
        image("b", "a blue cube", 2, 2, 32),
        image("c", "a cat", 3, 3, 32));
  }

  private static Request image(String id, String prompt, long seed, int steps, int width) {
    return Request.builder(
            TaskType.T2I,
            new DiffusionParams(
                steps, 5.0, seed, width, 32, 1, 8, "", Optional.empty(), Optional.empty()))
        .id(id)
        .prompt(prompt)
        .build();
  }

  private static ModeSummary summary(RunResult r) {
    return new ModeSummary(r.mode(), List.of(r));
  }

  @Test
  void batchingSharesTransformerCallsAndChangesNoOutput() throws Exception {
    List<Request> requests = threeImages();
    OutputReference reference = new OutputReference();
    Arrivals atOnce = new Arrivals.ClosedLoop(requests.size());
    RunResult serial = runner.serve(ServingMode.SERIAL, requests, atOnce, reference);
    RunResult steps = runner.serve(ServingMode.STEP_LEVEL, requests, atOnce, reference);
    RunResult groups = runner.serve(ServingMode.REQUEST_LEVEL, requests, atOnce, reference);
    int total = 3 + 2 + 3;

    assertEquals(total, summary(serial).callsPerRound(WorkKind.DIFFUSION_STEP));
    assertEquals("1:" + serial.stats().batchSizes().count(), summary(serial).batchSizeHistogram());
    // All three share a shape and overlap in time, so some of their steps go as one call. How
    // many depends on the tick at which each is admitted, so only "some" is asserted.
    assertTrue(summary(steps).callsPerRound(WorkKind.DIFFUSION_STEP) < total, steps.toString());
    assertTrue(
        summary(steps).batchSizeHistogram().matches(".*\\b(2|3-4):[1-9].*"),
        summary(steps).batchSizeHistogram());
    // Request-level groups hold whoever had arrived when the engine was idle: at most all three.
    assertTrue(summary(groups).callsPerRound(WorkKind.DIFFUSION_STEP) <= total);

    for (RunResult r : List.of(serial, steps, groups)) {
      assertEquals(3, r.latencies().size());
      assertEquals(3, r.stats().completed());
      assertEquals(List.of(Deviation.NONE, Deviation.NONE, Deviation.NONE), r.deviations());
      assertEquals(3, summary(r).acceptedOutputs(OutputCheck.BIT_IDENTICAL), r.mode().label());
      Duration longest = r.latencies().stream().max(Duration::compareTo).orElseThrow();
      assertTrue(longest.compareTo(r.wall()) <= 0, r.wall() + " < " + longest);
    }
  }

  @Test
  void aRequestLevelGroupOfWanImagesStepsAsOneCallPerTickAndAnotherShapeWaits() throws Exception {
    List<Request> group = new ArrayList<>(threeImages());
    group.add(image("wide", "a wide field", 4, 2, 48));
    EngineConfig config = ServingMode.REQUEST_LEVEL.config(EngineConfig.defaults(), 8);
    List<String> finished = java.util.Collections.synchronizedList(new ArrayList<>());
    try (Engine engine = new Engine(model, config)) {
      // Queued together, so the idle engine sees all four at its first admission.
      List<RequestHandle> handles = engine.submitAll(group);
      for (RequestHandle h : handles) {
        h.result().whenComplete((result, error) -> finished.add(h.requestId()));
      }
      for (RequestHandle h : handles) {
        h.result().get(120, TimeUnit.SECONDS);
      }
      // The three 32×32 images step together — three calls, the third without b — and the
      // 48×32 one starts only once they are all done (with step-level batching it would run
      // beside them and finish with b): its two steps alone.
      var dit = engine.stats().stepSeconds().get(WorkKind.DIFFUSION_STEP);
      assertEquals(3 + 2, dit.count());
      assertEquals("wide", finished.getLast(), finished.toString());
      assertEquals("b", finished.getFirst(), finished.toString());
    }
  }

  @Test
  void aClosedLoopOfOneClientServesTheRequestsOneAfterAnother() throws Exception {
    List<Request> requests = threeImages();
    OutputReference reference = new OutputReference();
    runner.serve(ServingMode.SERIAL, requests, new Arrivals.ClosedLoop(1), reference);
    RunResult r =
        runner.serve(ServingMode.STEP_LEVEL, requests, new Arrivals.ClosedLoop(1), reference);
    // With one request outstanding at a time there is never anyone to batch with.
    assertEquals("1:" + r.stats().batchSizes().count(), summary(r).batchSizeHistogram());
    Duration sum = r.latencies().stream().reduce(Duration.ZERO, Duration::plus);
    assertTrue(sum.compareTo(r.wall()) <= 0, "latencies " + sum + " within wall " + r.wall());
  }

  @Test
  void anOpenLoopSubmitsEachRequestAtItsScheduledArrival() throws Exception {
    List<Request> requests = threeImages();
    OutputReference reference = new OutputReference();
    runner.serve(ServingMode.SERIAL, requests, new Arrivals.ClosedLoop(3), reference);
    var poisson = new Arrivals.Poisson(20, 11);
    RunResult r = runner.serve(ServingMode.STEP_LEVEL, requests, poisson, reference);
    long[] offsets = poisson.offsetsNanos(3);
    // Latency counts from the scheduled arrival: a request submitted early could finish before it.
    for (Duration latency : r.latencies()) {
      assertTrue(latency.isPositive(), r.latencies().toString());
    }
    assertTrue(r.wall().toNanos() > offsets[2], r.wall() + " vs last arrival " + offsets[2]);
    assertEquals(3, r.stats().admitted());
    assertEquals(List.of(Deviation.NONE, Deviation.NONE, Deviation.NONE), r.deviations());
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
                    List.of(new Deviation(true, 0), new Deviation(false, 3e-3)),
                    null)));
    assertEquals(5.0, s.latencyPercentile(0.5));
    assertEquals(10.0, s.latencyPercentile(0.95));
    assertEquals(1.0, s.latencyPercentile(0.0));
    assertEquals(1.0, s.requestsPerSecond());
    assertEquals(3e-3, s.maxRelativeL2());
    assertEquals(1, s.acceptedOutputs(OutputCheck.BIT_IDENTICAL));
    assertEquals(2, s.acceptedOutputs(OutputCheck.WITHIN_BOUND));
  }
}

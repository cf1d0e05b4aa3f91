package dev.stepweave.core.runtime;

import static dev.stepweave.core.runtime.FakePool.request;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.loop.ResourceRequest;
import dev.stepweave.core.loop.ShapeSignature;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Whole-request pricing at submit, the cost limits, and the jumbo class, on the fake pool ticked by
 * hand (its steps cost 1e8 FLOPs: 1 ms at the default rate; a request of n steps runs n denoise and
 * n decode steps).
 */
class CostClassTest {
  private final FakePool pool = new FakePool();

  private EngineCore core(CostLimits limits) {
    return new EngineCore(pool, EngineConfig.builder().costLimits(limits).build(), Extensions.NONE);
  }

  private static RequestHandle submit(EngineCore core, String prompt, int steps) {
    return core.submit(request(prompt, steps, 256), null, RequestOptions.DEFAULT);
  }

  /**
   * A jumbo request: width 25600, so 100 ms a step — a hundred times a small one's, so that no
   * calibration the fake's fast steps give can move either across the limits {@link #JUMBO_ON}.
   */
  private static RequestHandle submitJumbo(EngineCore core, String prompt, int steps) {
    return core.submit(request(prompt, steps, 25600), null, RequestOptions.DEFAULT);
  }

  /** 50 ms a step, 100 s a request, the jumbo class on. */
  private static final CostLimits JUMBO_ON = new CostLimits(0.05, 100, true);

  @Test
  void aRequestIsPricedWholeAndItsLargestStepApart() {
    RequestHandle h = submit(core(CostLimits.UNLIMITED), "a", 10);
    RequestPrice p = h.price();
    assertEquals(0.020, p.requestSeconds(), 1e-12); // 20 steps of 1 ms
    assertEquals(0.001, p.largestStepSeconds(), 1e-12);
    assertEquals("denoise", p.largestStepLoop());
    assertFalse(p.calibrated());
    assertEquals(CostClass.LATENCY, h.costClass());
  }

  @Test
  void overALimitWithoutAJumboClassIsRefusedNamingThePredictedFigures() {
    EngineCore core = core(new CostLimits(1, 0.010, false));
    CostLimitExceededException e =
        assertThrows(CostLimitExceededException.class, () -> submit(core, "big", 10));
    assertEquals(
        "request "
            + e.getMessage().split(" ")[1]
            + " is predicted to cost more than this deployment allows: largest step 0.001 s"
            + " (loop denoise), 0.02 s in all; the limits are 1 s a step and 0.01 s a request",
        e.getMessage());
    assertEquals(0.020, e.price().requestSeconds(), 1e-12);
    assertEquals(1, core.stats(true).rejected());
    // Within the limits: accepted.
    assertEquals(CostClass.LATENCY, submit(core, "small", 4).costClass());
    // The step limit alone refuses too.
    EngineCore strictStep = core(new CostLimits(0.0005, 100, false));
    assertThrows(CostLimitExceededException.class, () -> submit(strictStep, "any", 1));
  }

  @Test
  void measurementsSlowerThanStaticRaiseThePriceAndFasterOnesNeverLowerIt() {
    CostModel cost = new CostModel(1e8, 1e7);
    Pricing pricing = new Pricing(cost);
    ResourceRequest unit = new ResourceRequest(0, 0, 0, 0, 1e8, 0);
    CostModel.Key denoise =
        new CostModel.Key(
            pool.card().modelId(),
            WorkKind.DIFFUSION_STEP,
            ShapeSignature.of("other", 1),
            pool.precision(),
            1);
    cost.observe(denoise, unit, 3.0); // three times its 1 ms static figure
    var r = request("a", 10, 256);
    RequestPrice raised = pricing.price(pool, r, ResourceRequest.NONE);
    assertTrue(raised.calibrated());
    assertEquals(0.003, raised.largestStepSeconds(), 1e-12);
    assertEquals(10 * 0.003 + 10 * 0.001, raised.requestSeconds(), 1e-12);
    assertEquals(
        Optional.of(3.0),
        cost.calibration(pool.card().modelId(), WorkKind.DIFFUSION_STEP, pool.precision())
            .map(CostModel.Calibration::factor));
    assertEquals(1, cost.snapshot().calibrations().size());

    CostModel fast = new CostModel(1e8, 1e7);
    fast.observe(denoise, unit, 0.1);
    RequestPrice kept = new Pricing(fast).price(pool, r, ResourceRequest.NONE);
    assertFalse(kept.calibrated());
    assertEquals(0.001, kept.largestStepSeconds(), 1e-12);
  }

  @Test
  void jumboWorkNeverSharesATickWithLatencyWorkSoSmallRequestsKeepFlowing() throws Exception {
    EngineCore core = core(JUMBO_ON);
    RequestHandle jumbo = submitJumbo(core, "jumbo", 10);
    assertEquals(CostClass.JUMBO, jumbo.costClass());
    core.tick(); // the pool is idle: the jumbo is admitted and takes its first step
    assertEquals(List.of(new FakePool.Ran("jumbo", "denoise", 0, 1)), pool.ran);

    RequestHandle small = submit(core, "small", 2);
    RequestHandle small2 = submit(core, "small2", 2);
    assertEquals(CostClass.LATENCY, small.costClass());
    pool.ran.clear();
    while (!(small.result().isDone() && small2.result().isDone())) {
      core.tick();
    }
    // Every step that ran while they did was theirs; the jumbo sat out, and never in a batch.
    List<String> who = new ArrayList<>();
    pool.ran.forEach(r -> who.add(r.prompt()));
    assertFalse(who.contains("jumbo"), who.toString());
    assertFalse(jumbo.result().isDone());

    while (!jumbo.result().isDone()) {
      core.tick();
    }
    assertTrue(
        pool.ran.stream()
            .filter(r -> r.prompt().equals("jumbo"))
            .allMatch(r -> r.batchSize() == 1));
    assertEquals(FakePool.expected(10), FakePool.value(jumbo.result().get()));
    assertEquals(CostClass.LATENCY, small.costClass());
  }

  @Test
  void jumboRequestsRunOneAtATimeAndOnlyOnceNoLatencyWorkWaits() {
    EngineCore core = core(JUMBO_ON);
    RequestHandle small = submit(core, "small", 2);
    RequestHandle first = submitJumbo(core, "jumbo-1", 6);
    RequestHandle second = submitJumbo(core, "jumbo-2", 6);
    core.tick();
    // The small one runs; the jumbos wait while it does.
    assertEquals(List.of("small"), pool.ran.stream().map(FakePool.Ran::prompt).distinct().toList());
    while (!small.result().isDone()) {
      core.tick();
    }
    pool.ran.clear();
    core.tick();
    core.tick();
    assertEquals(
        List.of("jumbo-1"), pool.ran.stream().map(FakePool.Ran::prompt).distinct().toList());
    while (!first.result().isDone()) {
      core.tick();
    }
    assertFalse(second.result().isDone());
    while (!second.result().isDone()) {
      core.tick();
    }
  }

  @Test
  void aCancelledJumboStopsEvenWhileLatencyWorkRuns() {
    EngineCore core = core(JUMBO_ON);
    RequestHandle jumbo = submitJumbo(core, "jumbo", 10);
    core.tick();
    RequestHandle small = submit(core, "small", 10);
    core.tick();
    jumbo.cancel();
    core.tick();
    assertTrue(jumbo.result().isCompletedExceptionally());
    assertFalse(small.result().isDone());
  }

  @Test
  void theHandleNamesTheStepInFlightWhileItsCallRuns() {
    EngineCore core = core(CostLimits.UNLIMITED);
    RequestHandle h = submit(core, "a", 3);
    List<Optional<StepInFlight>> seen = new ArrayList<>();
    pool.onStep = r -> seen.add(h.stepInFlight());
    core.tick();
    core.tick();
    assertEquals(2, seen.size());
    assertEquals("denoise", seen.get(0).orElseThrow().loopId());
    assertEquals(0, seen.get(0).orElseThrow().stepIndex());
    assertEquals(1, seen.get(1).orElseThrow().stepIndex());
    assertEquals(0.001, seen.get(0).orElseThrow().predictedSeconds(), 1e-12);
    assertTrue(h.stepInFlight().isEmpty(), "no step in flight between ticks");
  }
}

package dev.stepweave.core.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.loop.CancelScope;
import dev.stepweave.core.loop.ResourceRequest;
import dev.stepweave.core.loop.ShapeSignature;
import dev.stepweave.core.loop.StepResult;
import dev.stepweave.core.loop.WorkPlan;
import dev.stepweave.core.memory.Reservation;
import dev.stepweave.tensor.Precision;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Each scheduler layer alone, with no model. */
class SchedulerLayersTest {
  private static final BatchScheduler.Pool POOL =
      new BatchScheduler.Pool("fake", Precision.F32, "single", 0);

  @Test
  void requestSchedulerOrdersByPriorityThenDeadlineThenArrivalAndRequeuesInPlace() {
    RequestScheduler<String> q = new RequestScheduler<>();
    Instant t = Instant.parse("2030-01-01T00:00:00Z");
    var a = q.offer("a", 0, null);
    q.offer("b", 0, t.plusSeconds(10));
    q.offer("c", 5, null);
    q.offer("d", 0, t);
    var e = q.offer("e", 0, null);
    assertEquals(
        List.of("c", "d", "b", "a", "e"), q.ordered().stream().map(x -> x.item()).toList());
    assertTrue(q.remove(a));
    q.offer("f", 0, null);
    q.requeue(a); // a preempted request keeps its arrival: ahead of e and f
    assertEquals(
        List.of("c", "d", "b", "a", "e", "f"), q.ordered().stream().map(x -> x.item()).toList());
    assertTrue(q.remove(e));
    assertEquals(5, q.size());
  }

  @Test
  void admissionReservesMemoryComputeAndBlocksTogetherAndReleases() {
    EngineConfig c =
        EngineConfig.builder()
            .maxRunning(3)
            .memoryBudgetBytes(1000)
            .computeBudgetMillis(100)
            .cacheBlocks(4)
            .build();
    AdmissionController gate = new AdmissionController(c);
    var a = new Reservation("a", 600, 10, 1);
    var b = new Reservation("b", 600, 10, 1);
    var small = new Reservation("s", 300, 10, 1);
    assertTrue(gate.fits(a, List.of()));
    assertTrue(gate.tryReserve(a));
    assertFalse(gate.tryReserve(a)); // one reservation per request
    // b fits the pool alone, not beside a.
    assertFalse(gate.fits(b, List.of()));
    assertFalse(gate.tryReserve(b));
    assertTrue(gate.tryReserve(small));
    // a and s hold 900 bytes, 20 ms and 2 blocks: exactly what is left fits, one more of any not.
    assertTrue(gate.fits(new Reservation("t", 100, 80, 2), List.of()));
    assertFalse(gate.fits(new Reservation("t", 101, 80, 2), List.of()));
    assertFalse(gate.fits(new Reservation("t", 100, 81, 2), List.of()));
    assertFalse(gate.fits(new Reservation("t", 100, 80, 3), List.of()));
    assertTrue(gate.fits(b, List.of("a")));
    gate.release("a");
    assertTrue(gate.tryReserve(b));
    // compute and cache blocks are budgets too
    assertFalse(gate.tryReserve(new Reservation("x", 0, 81, 0)));
    assertFalse(gate.tryReserve(new Reservation("y", 0, 0, 3)));
    assertNull(gate.neverFits(b));
    String never = gate.neverFits(new Reservation("z", 1001, 0, 0));
    assertEquals("needs 1001 bytes of device memory, the pool has 1000", never);
    assertEquals(
        "needs 101 predicted device-ms, the pool's compute budget is 100",
        gate.neverFits(new Reservation("z", 0, 101, 0)));
    assertNotNull(gate.neverFits(new Reservation("z", 0, 0, 5)));
  }

  @Test
  void admissionBoundsTheRunningRequests() {
    AdmissionController gate =
        new AdmissionController(EngineConfig.builder().maxRunning(1).build());
    assertTrue(gate.tryReserve(new Reservation("a", 0, 0, 0)));
    assertFalse(gate.tryReserve(new Reservation("b", 0, 0, 0)));
    assertTrue(gate.fits(new Reservation("b", 0, 0, 0), List.of("a")));
  }

  @Test
  void costModelStartsStaticAndCalibratesPerKeyFromMeasurements() {
    CostModel cost = new CostModel(1e8, 1e7);
    ResourceRequest unit = new ResourceRequest(0, 0, 0, 0, 5e8, 2e7);
    assertEquals(5, cost.staticMillis(unit), 1e-9); // FLOP-bound: 5e8 / 1e8
    assertEquals(
        7, cost.staticMillis(new ResourceRequest(0, 0, 0, 0, 1e8, 7e7)), 1e-9); // byte-bound
    assertEquals(3, cost.staticMillis(new ResourceRequest(3, 0, 0, 0, 1e12, 0)), 1e-9);
    var one =
        new CostModel.Key(
            "m", WorkKind.DIFFUSION_STEP, ShapeSignature.of("s", 1), Precision.F32, 1);
    var four =
        new CostModel.Key(
            "m", WorkKind.DIFFUSION_STEP, ShapeSignature.of("s", 1), Precision.F32, 4);
    assertEquals(20, cost.predict(four, unit), 1e-9);
    cost.observe(one, unit, 10);
    assertEquals(10, cost.predict(one, unit), 1e-9);
    assertEquals(40, cost.predict(four, unit), 1e-9); // unmeasured size: linear in measured single
    cost.observe(one, unit, 20); // the second measurement replaces the first
    assertEquals(20, cost.predict(one, unit), 1e-9);
    cost.observe(one, unit, 30);
    assertEquals(20 + CostModel.ALPHA * 10, cost.predict(one, unit), 1e-9);
    cost.observe(four, unit, 16);
    assertEquals(16, cost.predict(four, unit), 1e-9);
    var snap = cost.snapshot();
    assertEquals(2, snap.entries().size());
    var e = snap.entries().stream().filter(x -> x.key().equals(one)).findFirst().orElseThrow();
    assertEquals(3, e.samples());
    assertEquals(5, e.staticMillis(), 1e-9);
  }

  private static WorkPlan plan(WorkKind kind, ShapeSignature shape, Object key, double millis) {
    var call =
        key == null
            ? (dev.stepweave.core.loop.WorkCall) () -> StepResult.of(null)
            : new dev.stepweave.core.loop.BatchableCall() {
              @Override
              public Object batchKey() {
                return key;
              }

              @Override
              public StepResult run() {
                return StepResult.of(null);
              }

              @Override
              public List<StepResult> runBatch(List<dev.stepweave.core.loop.BatchableCall> c) {
                return c.stream().map(x -> StepResult.of(null)).toList();
              }
            };
    return new WorkPlan(
        "loop",
        "i0",
        kind,
        shape,
        new ResourceRequest(millis, 0, 0, 0),
        new CancelScope("r"),
        0,
        call);
  }

  @Test
  void batchSchedulerGroupsOnlyCompatiblePlansAndBoundsSizeAndTime() {
    BatchScheduler b = new BatchScheduler(3, 100, new CostModel(1e8, 1e7));
    var s1 = ShapeSignature.of("dit", 1, 2);
    var s2 = ShapeSignature.of("dit", 1, 4);
    List<WorkPlan> plans =
        List.of(
            plan(WorkKind.DIFFUSION_STEP, s1, "k", 10), // 0
            plan(WorkKind.DIFFUSION_STEP, s2, "k", 10), // 1: other shape
            plan(WorkKind.DIFFUSION_STEP, s1, "k", 10), // 2
            plan(WorkKind.VAE_TILE, s1, "k", 10), // 3: other kind
            plan(WorkKind.DIFFUSION_STEP, s1, "other", 10), // 4: other runner
            plan(WorkKind.DIFFUSION_STEP, s1, null, 10), // 5: not batchable
            plan(WorkKind.DIFFUSION_STEP, s1, "k", 10), // 6
            plan(WorkKind.DIFFUSION_STEP, s1, "k", 10), // 7: fourth of its group: size bound
            plan(WorkKind.DIFFUSION_STEP, s2, "k", 10)); // 8
    var batches = b.group(plans, POOL);
    assertEquals(
        List.of(List.of(0, 2, 6), List.of(1, 8), List.of(3), List.of(4), List.of(5), List.of(7)),
        batches.stream().map(BatchScheduler.Batch::members).toList());
    assertEquals(30, batches.get(0).predictedMillis(), 1e-9);

    // Time bound: 40 ms units, 100 ms per batch → two per batch; a unit over the bound runs alone.
    List<WorkPlan> slow =
        List.of(
            plan(WorkKind.DIFFUSION_STEP, s1, "k", 40),
            plan(WorkKind.DIFFUSION_STEP, s1, "k", 40),
            plan(WorkKind.DIFFUSION_STEP, s1, "k", 40),
            plan(WorkKind.DIFFUSION_STEP, s2, "k", 500));
    assertEquals(
        List.of(List.of(0, 1), List.of(2), List.of(3)),
        b.group(slow, POOL).stream().map(BatchScheduler.Batch::members).toList());
  }
}

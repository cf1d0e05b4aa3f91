package dev.stepweave.core.runtime;

import static dev.stepweave.core.runtime.FakePool.expected;
import static dev.stepweave.core.runtime.FakePool.request;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.EngineConfig.Admission;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/**
 * Request-level batching ({@link Admission#SHAPE_GROUPS_WHEN_IDLE}), ticked by hand on the fake
 * pool: a group starts only on an idle pool, holds one shape, steps as one call per tick, and
 * nobody joins it once it runs. Each property is checked against continuous admission too, where it
 * does not hold, so the test can tell the two apart.
 */
class ShapeGroupAdmissionTest {
  private final FakePool pool = new FakePool();

  private EngineCore core(Admission admission, int maxBatchSize) {
    EngineConfig config =
        EngineConfig.builder().admission(admission).maxBatchSize(maxBatchSize).build();
    return new EngineCore(pool, config, Extensions.NONE);
  }

  private static RequestHandle submit(EngineCore core, String prompt, int steps, int width) {
    return core.submit(request(prompt, steps, width), null, RequestOptions.DEFAULT);
  }

  private static void tickUntilDone(EngineCore core, List<RequestHandle> handles) {
    for (int tick = 0; handles.stream().anyMatch(h -> !h.result().isDone()); tick++) {
      assertTrue(tick < 100, "still running after 100 ticks");
      core.tick();
    }
  }

  /** The batch sizes the prompt's steps ran in, in order. */
  private List<Integer> batchSizes(String prompt) {
    return pool.ranFor(prompt).stream().map(FakePool.Ran::batchSize).toList();
  }

  @Test
  void aLaterArrivalWaitsForTheWholeGroupEvenWhenItHasTheGroupsShape() throws Exception {
    for (Admission admission : Admission.values()) {
      pool.ran.clear();
      EngineCore core = core(admission, 8);
      RequestHandle a = submit(core, "a", 2, 256);
      RequestHandle b = submit(core, "b", 3, 256);
      core.tick();
      RequestHandle c = submit(core, "c", 2, 256);
      // Whether the group had finished when c's first step ran.
      Map<String, Boolean> groupDoneAtFirstStep = new ConcurrentHashMap<>();
      pool.onStep =
          r -> {
            if (r.prompt().equals("c")) {
              groupDoneAtFirstStep.putIfAbsent("c", a.result().isDone() && b.result().isDone());
            }
          };
      tickUntilDone(core, List.of(a, b, c));

      for (RequestHandle h : List.of(a, c)) {
        assertEquals(expected(2), FakePool.value(h.result().get()), admission.name());
      }
      assertEquals(expected(3), FakePool.value(b.result().get()));
      if (admission == Admission.SHAPE_GROUPS_WHEN_IDLE) {
        assertTrue(groupDoneAtFirstStep.get("c"), "c started before the group finished");
        assertEquals(List.of(1, 1, 1, 1), batchSizes("c"));
      } else {
        // Continuous admission lets c in at once: its first step shares a call with a and b.
        assertFalse(groupDoneAtFirstStep.get("c"));
        assertEquals(3, batchSizes("c").getFirst());
      }
    }
  }

  @Test
  void aGroupHoldsOneShapeAndARequestOfAnotherShapeHeadsTheNextGroup() {
    EngineCore core = core(Admission.SHAPE_GROUPS_WHEN_IDLE, 8);
    List<RequestHandle> handles = new ArrayList<>();
    // Arrival order interleaves two shapes: widths 256, 512, 256, 512.
    handles.add(submit(core, "a", 2, 256));
    handles.add(submit(core, "w", 2, 512));
    handles.add(submit(core, "b", 2, 256));
    handles.add(submit(core, "x", 2, 512));
    tickUntilDone(core, handles);

    // a and b (the head's shape) ran as one group, each step one call of both; then w and x.
    for (String p : List.of("a", "b", "w", "x")) {
      assertEquals(List.of(2, 2, 2, 2), batchSizes(p), p);
    }
    List<String> order = pool.ran.stream().map(FakePool.Ran::prompt).distinct().toList();
    assertEquals(List.of("a", "b", "w", "x"), order);
    int lastOfFirstGroup = lastIndexOf("b");
    int firstOfSecondGroup = pool.ran.stream().map(FakePool.Ran::prompt).toList().indexOf("w");
    assertTrue(lastOfFirstGroup < firstOfSecondGroup, pool.ran.toString());
  }

  @Test
  void aGroupIsAtMostOneBatchAndEveryTickOfItIsOneCall() {
    EngineCore core = core(Admission.SHAPE_GROUPS_WHEN_IDLE, 2);
    List<RequestHandle> handles = new ArrayList<>();
    for (String p : List.of("a", "b", "c")) {
      handles.add(submit(core, p, 3, 256));
    }
    tickUntilDone(core, handles);

    // Batches of two: a and b went together, every one of their six steps in one call of two;
    // c, alone in the next group, waited for both.
    assertEquals(List.of(2, 2, 2, 2, 2, 2), batchSizes("a"));
    assertEquals(List.of(2, 2, 2, 2, 2, 2), batchSizes("b"));
    assertEquals(List.of(1, 1, 1, 1, 1, 1), batchSizes("c"));
    assertTrue(
        lastIndexOf("b") < pool.ran.stream().map(FakePool.Ran::prompt).toList().indexOf("c"));
    assertEquals(3, core.stats(true).completed());
  }

  @Test
  void theShapeIsTaskSizeFramesAndWhetherGuidanceRunsASecondBranch() {
    Request base = request("p", 4, 256);
    DiffusionParams p = base.params();
    assertEquals(RequestShape.of(base), RequestShape.of(request("other prompt", 9, 256)));
    assertFalse(RequestShape.of(base).guided());
    Request guided =
        Request.text(
            TaskType.T2V,
            "p",
            new DiffusionParams(
                4,
                5,
                0,
                p.width(),
                p.height(),
                p.frames(),
                8,
                "",
                Optional.empty(),
                Optional.empty()));
    assertTrue(RequestShape.of(guided).guided());
    assertEquals(new RequestShape(TaskType.T2V, 256, 256, 17, false), RequestShape.of(base));
  }

  private int lastIndexOf(String prompt) {
    return pool.ran.stream().map(FakePool.Ran::prompt).toList().lastIndexOf(prompt);
  }
}

package dev.stepweave.core.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import dev.stepweave.core.request.CancelledException;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The loop layer alone: one turn per running request per tick, boundaries for cancel/deadline. */
class LoopSchedulerTest {
  private final FakePool pool = new FakePool();

  private ProgramRun run(String prompt, int steps, RequestOptions options) {
    return pool.run(FakePool.request(prompt, steps, 256), options, 0);
  }

  @Test
  void everyRunningRequestGetsExactlyOneTurnPerTickUntilItsProgramEnds() {
    LoopScheduler loops = new LoopScheduler();
    ProgramRun a = run("a", 1, RequestOptions.DEFAULT);
    ProgramRun b = run("b", 2, RequestOptions.DEFAULT);
    loops.add(a);
    loops.add(b);
    List<String> seen = new java.util.ArrayList<>();
    for (int tick = 0; tick < 5; tick++) {
      for (LoopScheduler.Turn t : loops.collect(pool, Instant.now(), r -> false)) {
        switch (t) {
          case LoopScheduler.Planned p -> {
            seen.add(p.run().request.prompt() + ":" + p.plan().loopId() + p.plan().stepIndex());
            p.run().advance(p.plan().call().run(), RecoveryCheckpoints.OFF, pool::backend);
          }
          case LoopScheduler.Finished f -> {
            seen.add(f.run().request.prompt() + ":done");
            loops.remove(f.run());
          }
          case LoopScheduler.Stopped s -> throw s.why();
        }
      }
    }
    assertEquals(
        List.of(
            "a:denoise0",
            "b:denoise0",
            "a:decode0",
            "b:denoise1",
            "a:done",
            "b:decode0",
            "b:decode1",
            "b:done"),
        seen);
    assertEquals(0, loops.size());
  }

  @Test
  void cancellationAndDeadlinesStopARunAtItsNextTurn() {
    LoopScheduler loops = new LoopScheduler();
    ProgramRun cancelled = run("c", 3, RequestOptions.DEFAULT);
    ProgramRun late =
        run("l", 3, RequestOptions.DEFAULT.withDeadline(Instant.now().plusSeconds(60)));
    loops.add(cancelled);
    loops.add(late);
    loops.collect(pool, Instant.now(), r -> false); // both plan their first step
    cancelled.handle.cancel();
    List<LoopScheduler.Turn> turns =
        loops.collect(pool, Instant.now().plusSeconds(120), r -> false);
    assertInstanceOf(CancelledException.class, ((LoopScheduler.Stopped) turns.get(0)).why());
    assertInstanceOf(DeadlineExceededException.class, ((LoopScheduler.Stopped) turns.get(1)).why());
  }
}

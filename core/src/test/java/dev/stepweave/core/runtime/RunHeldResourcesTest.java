package dev.stepweave.core.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.stepweave.core.loop.WorkPlan;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * What a loop holds for its run (a cached adapter's lease) is let go exactly when the run drops its
 * device state: rewound after a fault, suspended, finished or failed.
 */
class RunHeldResourcesTest {
  private final FakePool pool = new FakePool();

  @Test
  void aRewindClosesWhatTheLoopHeldAndTheRestartHoldsAgain() {
    ProgramRun run = pool.run(FakePool.request("a", 3, 256), RequestOptions.DEFAULT, 0);
    WorkPlan plan = run.next(pool);
    assertEquals(1, pool.held.get());
    run.advance(plan.call().run(), RecoveryCheckpoints.DEFAULT, pool::backend);
    run.rewind();
    assertEquals(0, pool.held.get());
    run.next(pool);
    assertEquals(1, pool.held.get(), "the resumed loop holds again");
    run.suspend(pool::backend);
    assertEquals(0, pool.held.get());
  }

  @Test
  void finishedAndFailedRunsHoldNothing() throws Exception {
    try (Engine engine = new Engine(pool)) {
      engine.submit(FakePool.request("ok", 3, 256)).result().get(10, TimeUnit.SECONDS);
      pool.faults.put(new FakePool.At("bad", "denoise", 1), "boom");
      var bad = engine.submit(FakePool.request("bad", 3, 256));
      try {
        bad.result().get(10, TimeUnit.SECONDS);
      } catch (java.util.concurrent.ExecutionException expected) {
        // the fault fails the request; what matters is what it still holds
      }
    }
    assertEquals(0, pool.held.get());
  }
}

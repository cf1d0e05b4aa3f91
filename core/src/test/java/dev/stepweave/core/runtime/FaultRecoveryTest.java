package dev.stepweave.core.runtime;

import static dev.stepweave.core.runtime.FakePool.request;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;

import dev.stepweave.core.loop.WorkPlan;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.Test;

/** The recovery layer alone, on the fake pool: re-initialise and rewind, or give up and fail. */
class FaultRecoveryTest {
  private final FakePool pool = new FakePool();
  private final PoolFatalException fault = new PoolFatalException("simulated device loss");
  private final List<String> failures = new ArrayList<>();
  private final BiConsumer<ProgramRun, Throwable> fail =
      (run, why) -> failures.add(run.id() + ": " + why.getMessage());

  /** A run of {@code steps} steps that has done {@code done}, checkpointing after each. */
  private ProgramRun runAfter(String prompt, int done) {
    ProgramRun run = pool.run(request(prompt, 4, 256), RequestOptions.DEFAULT, 0);
    for (int i = 0; i < done; i++) {
      WorkPlan plan = run.next(pool);
      run.advance(plan.call().run(), RecoveryCheckpoints.DEFAULT, pool::backend);
    }
    return run;
  }

  @Test
  void aFaultReinitialisesThePoolAndRewindsEveryRunningRequestToItsLastStep() {
    FakePool fresh = new FakePool("fresh");
    List<Throwable> causes = new ArrayList<>();
    FaultRecovery recovery =
        new FaultRecovery(
            (broken, cause) -> {
              assertSame(pool, broken);
              causes.add(cause);
              return fresh;
            });
    ProgramRun a = runAfter("a", 2);
    ProgramRun b = runAfter("b", 0);

    assertSame(fresh, recovery.recover(pool, fault, List.of(a, b), fail));

    assertEquals(List.of(fault), causes);
    assertEquals(List.of(), failures);
    assertEquals(1, recovery.faults());
    assertFalse(recovery.recovering());
    assertEquals(2, a.next(fresh).stepIndex());
    assertEquals(0, b.next(fresh).stepIndex());
  }

  @Test
  void faultsInARowPastTheLimitFailTheRunningRequestsUntilATickCompletes() {
    FaultRecovery recovery = new FaultRecovery(PoolRecovery.SAME_INSTANCE);
    List<ProgramRun> running = List.of(runAfter("a", 1), runAfter("b", 1));
    for (int i = 0; i < FaultRecovery.MAX_CONSECUTIVE_POOL_FAULTS; i++) {
      assertSame(pool, recovery.recover(pool, fault, running, fail));
    }
    assertEquals(List.of(), failures);

    assertSame(pool, recovery.recover(pool, fault, running, fail));
    List<String> gaveUp =
        List.of(
            running.get(0).id() + ": pool failed repeatedly: simulated device loss",
            running.get(1).id() + ": pool failed repeatedly: simulated device loss");
    assertEquals(gaveUp, failures);

    recovery.tickCompleted();
    assertSame(pool, recovery.recover(pool, fault, running, fail));
    assertEquals(gaveUp, failures); // the count started again
    assertEquals(FaultRecovery.MAX_CONSECUTIVE_POOL_FAULTS + 2, recovery.faults());
  }

  @Test
  void aFailedReinitialisationFailsTheRunningRequests() {
    FaultRecovery recovery =
        new FaultRecovery(
            (broken, cause) -> {
              throw new IllegalStateException("no device");
            });
    ProgramRun a = runAfter("a", 1);

    assertSame(pool, recovery.recover(pool, fault, List.of(a), fail));

    assertEquals(List.of(a.id() + ": pool re-initialisation failed: no device"), failures);
    assertFalse(recovery.recovering());
    assertEquals(1, recovery.faults());
  }
}

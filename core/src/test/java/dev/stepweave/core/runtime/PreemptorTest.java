package dev.stepweave.core.runtime;

import static dev.stepweave.core.runtime.FakePool.request;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.loop.WorkPlan;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The preemption layer alone, on the fake pool, with the queue, loop and admission layers. */
class PreemptorTest {
  private final FakePool pool = new FakePool();
  private final LoopScheduler loops = new LoopScheduler();
  private final RequestScheduler<ProgramRun> queue = new RequestScheduler<>();

  private static AdmissionController admission(int maxRunning, long memoryBytes) {
    return new AdmissionController(
        EngineConfig.builder().maxRunning(maxRunning).memoryBudgetBytes(memoryBytes).build());
  }

  private static Preemptor preemptor(AdmissionController admission) {
    return new Preemptor(EngineConfig.Preemption.SERIALIZE_TO_HOST, admission);
  }

  private ProgramRun queued(String prompt, int priority, long memoryBytes) {
    ProgramRun run = pool.run(request(prompt, 3, 256), RequestOptions.DEFAULT, memoryBytes);
    run.queuedAs(queue.offer(run, priority, null));
    return run;
  }

  /** Admits as the engine core does: reserve, leave the queue, join the running loops. */
  private ProgramRun running(
      AdmissionController admission, String prompt, int priority, long memoryBytes) {
    ProgramRun run = queued(prompt, priority, memoryBytes);
    assertTrue(admission.tryReserve(run.reservation));
    queue.remove(run.entry());
    loops.add(run);
    return run;
  }

  private void step(ProgramRun run) {
    WorkPlan plan = run.next(pool);
    run.advance(plan.call().run(), RecoveryCheckpoints.OFF, pool::backend);
  }

  private List<String> queued() {
    return queue.ordered().stream().map(e -> e.item().id()).toList();
  }

  @Test
  void aHigherPriorityRequestSuspendsALowerOneWhichResumesWhereItStood() {
    AdmissionController admission = admission(1, Long.MAX_VALUE);
    Preemptor preemptor = preemptor(admission);
    ProgramRun low = running(admission, "low", 0, 0);
    step(low);
    step(low);
    ProgramRun high = queued("high", 5, 0);
    assertFalse(admission.tryReserve(high.reservation));

    assertTrue(preemptor.makeRoom(high.entry(), loops, r -> queue, pool::backend));

    assertTrue(loops.isEmpty());
    assertEquals(List.of(high.id(), low.id()), queued());
    assertEquals(1, preemptor.preempted());
    assertFalse(admission.tryReserve(low.reservation)); // high holds the one slot now
    // Once high is done, low resumes from its host checkpoint: step 2, not step 0.
    admission.release(high.id());
    queue.remove(high.entry());
    assertTrue(admission.tryReserve(low.reservation));
    assertEquals(2, low.next(pool).stepIndex());
  }

  @Test
  void theLowestPriorityLatestAdmittedGoesFirstAndOnlyAsManyAsNeeded() {
    AdmissionController admission = admission(3, 900);
    Preemptor preemptor = preemptor(admission);
    ProgramRun a = running(admission, "a", 0, 300);
    ProgramRun b = running(admission, "b", 0, 300);
    ProgramRun c = running(admission, "c", 1, 300);
    ProgramRun waiting = queued("w", 5, 300);

    assertTrue(preemptor.makeRoom(waiting.entry(), loops, r -> queue, pool::backend));

    assertEquals(List.of(a, c), loops.running());
    assertEquals(List.of(waiting.id(), b.id()), queued());
    assertEquals(1, preemptor.preempted());
  }

  @Test
  void nobodyIsSuspendedUnlessThatMakesRoom() {
    AdmissionController admission = admission(2, 1000);
    Preemptor preemptor = preemptor(admission);
    ProgramRun low = running(admission, "low", 0, 400);
    ProgramRun mid = running(admission, "mid", 3, 400);
    // Only low is below it, and its 400 bytes would leave 600 free: not enough.
    ProgramRun big = queued("big", 2, 900);
    assertFalse(preemptor.makeRoom(big.entry(), loops, r -> queue, pool::backend));
    // An equal priority never preempts: low is not below it, mid is above it.
    ProgramRun peer = queued("peer", 0, 100);
    assertFalse(preemptor.makeRoom(peer.entry(), loops, r -> queue, pool::backend));

    assertEquals(List.of(low, mid), loops.running());
    assertEquals(List.of(big.id(), peer.id()), queued());
    assertEquals(0, preemptor.preempted());
  }

  @Test
  void withoutThePolicyNothingIsEverPreempted() {
    AdmissionController admission = admission(1, Long.MAX_VALUE);
    Preemptor off = new Preemptor(EngineConfig.Preemption.NONE, admission);
    ProgramRun low = running(admission, "low", 0, 0);
    ProgramRun high = queued("high", 5, 0);

    assertFalse(off.makeRoom(high.entry(), loops, r -> queue, pool::backend));

    assertEquals(List.of(low), loops.running());
    assertEquals(0, off.preempted());
  }
}

package dev.stepweave.core.runtime;

import static dev.stepweave.core.runtime.FakePool.expected;
import static dev.stepweave.core.runtime.FakePool.request;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.request.CancelledException;
import dev.stepweave.core.request.RequestEvent;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The engine core ticked by hand: no scheduler thread, no waiting, every tick deterministic. */
class EngineCoreTest {
  private final FakePool pool = new FakePool();
  private final EngineCore core = new EngineCore(pool, EngineConfig.defaults(), Extensions.NONE);

  private RequestHandle submit(String prompt, int steps) {
    return core.submit(request(prompt, steps, 256), null, RequestOptions.DEFAULT);
  }

  private static List<Class<?>> types(RequestHandle h) {
    return h.eventsSoFar().stream().<Class<?>>map(Object::getClass).toList();
  }

  @Test
  void oneTickAdmitsPlansBatchesRunsAdvancesAndEmitsInThatOrder() {
    RequestHandle a = submit("a", 2);
    RequestHandle b = submit("b", 2);
    // What each request had been told when its step ran: admitted (started), not yet advanced.
    List<List<Class<?>>> toldAtRun = new ArrayList<>();
    pool.onStep = r -> toldAtRun.add(types(r.prompt().equals("a") ? a : b));
    assertEquals(List.of(RequestEvent.Queued.class), types(a));

    core.tick();

    // Both admitted, planned and grouped into one call of two.
    assertEquals(
        List.of(new FakePool.Ran("a", "denoise", 0, 2), new FakePool.Ran("b", "denoise", 0, 2)),
        pool.ran);
    List<Class<?>> started = List.of(RequestEvent.Queued.class, RequestEvent.Started.class);
    assertEquals(List.of(started, started), toldAtRun);
    // Then split, advanced and emitted.
    for (RequestHandle h : List.of(a, b)) {
      assertEquals(
          List.of(RequestEvent.Queued.class, RequestEvent.Started.class, RequestEvent.Step.class),
          types(h));
      var step = (RequestEvent.Step) h.eventsSoFar().getLast();
      assertEquals("denoise", step.loopId());
      assertEquals(1, step.step());
    }
    assertEquals(0, core.stats(true).queued());
    assertEquals(2, core.stats(true).runningLoops());
  }

  @Test
  void aProgramTakesOneTickPerStepAndOneToFinish() throws Exception {
    RequestHandle a = submit("a", 2);
    for (int tick = 0; tick < 4; tick++) { // two denoise steps, two decode steps
      core.tick();
      assertFalse(a.result().isDone(), "done after tick " + tick);
    }
    core.tick();
    assertEquals(expected(2), FakePool.value(a.result().getNow(null)));
    assertInstanceOf(RequestEvent.Completed.class, a.eventsSoFar().getLast());
    assertEquals(1, core.stats(true).completed());
    assertEquals(0, core.stats(true).runningLoops());
  }

  @Test
  void cancelLandsAtTheNextTickBoundary() {
    RequestHandle a = submit("a", 3);
    core.tick();
    assertTrue(a.cancel());
    // Nothing happens between ticks.
    assertFalse(a.result().isDone());
    assertInstanceOf(RequestEvent.Step.class, a.eventsSoFar().getLast());

    core.tick();

    assertEquals(
        new RequestEvent.Cancelled(a.requestId(), "denoise", 1), a.eventsSoFar().getLast());
    var e = assertThrowsCause(a);
    assertInstanceOf(CancelledException.class, e);
    assertEquals(List.of(0), pool.ranFor("a").stream().map(FakePool.Ran::step).toList());
    assertEquals(1, core.stats(true).cancelled());
    assertEquals(0, core.stats(true).runningLoops());
  }

  @Test
  void aRequestCancelledWhileQueuedLeavesAtTheNextTickWithoutRunning() {
    RequestHandle a = submit("a", 3);
    assertTrue(a.cancel());
    core.tick();
    assertEquals(
        List.of(
            new RequestEvent.Queued(a.requestId()),
            new RequestEvent.Cancelled(a.requestId(), "denoise", 0)),
        a.eventsSoFar());
    assertInstanceOf(CancelledException.class, assertThrowsCause(a));
    assertTrue(pool.ran.isEmpty());
    assertEquals(0, core.stats(true).admitted());
  }

  @Test
  void deadlinesAreJudgedAtTickBoundariesByTheCoresClock() throws Exception {
    Instant start = Instant.parse("2030-01-01T00:00:00Z");
    AtomicReference<Instant> now = new AtomicReference<>(start);
    EngineCore timed = new EngineCore(pool, EngineConfig.defaults(), Extensions.NONE, now::get);
    RequestOptions byOneMinute = RequestOptions.DEFAULT.withDeadline(start.plusSeconds(60));
    RequestHandle running = timed.submit(request("running", 3, 256), null, byOneMinute);
    timed.tick();
    timed.tick();
    RequestHandle queued = timed.submit(request("queued", 3, 256), null, byOneMinute);
    now.set(start.plusSeconds(61));

    timed.tick();

    var late = (DeadlineExceededException) assertThrowsCause(running);
    assertTrue(late.getMessage().endsWith("after 2 steps of loop 'denoise'"), late.getMessage());
    assertTrue(assertThrowsCause(queued).getMessage().endsWith("while queued"));
    assertEquals(List.of(0, 1), pool.ranFor("running").stream().map(FakePool.Ran::step).toList());
    assertTrue(pool.ranFor("queued").isEmpty());
    assertEquals(2, timed.stats(true).failed());
  }

  @Test
  void aTickWithNothingToDoChangesNothing() {
    core.tick();
    EngineStats s = core.stats(true);
    assertEquals(0, s.queued() + s.runningLoops() + s.admitted() + s.completed());
    assertTrue(s.accepting());
  }

  private static Throwable assertThrowsCause(RequestHandle h) {
    assertTrue(h.result().isCompletedExceptionally());
    try {
      h.result().get();
    } catch (ExecutionException e) {
      return e.getCause();
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    }
    throw new AssertionError("completed normally");
  }
}

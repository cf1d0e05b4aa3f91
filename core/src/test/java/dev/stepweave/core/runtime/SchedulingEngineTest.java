package dev.stepweave.core.runtime;

import static dev.stepweave.core.runtime.FakePool.expected;
import static dev.stepweave.core.runtime.FakePool.memoryOf;
import static dev.stepweave.core.runtime.FakePool.request;
import static dev.stepweave.core.runtime.FakePool.value;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.CancelledException;
import dev.stepweave.core.request.RequestEvent;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/** The engine's policies on a fake pool: batching, admission, fairness, faults, recovery. */
class SchedulingEngineTest {
  private static GenerationResult await(RequestHandle h) throws Exception {
    return h.result().get(10, TimeUnit.SECONDS);
  }

  /** Blocks the scheduler inside the first step run until released, so submissions queue up. */
  private static CountDownLatch holdFirstStep(FakePool pool) {
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger calls = new AtomicInteger();
    pool.onStep =
        r -> {
          if (calls.getAndIncrement() == 0) {
            awaitQuietly(release);
          }
        };
    return release;
  }

  @Test
  void concurrentRequestsOfOneShapeShareBatchedStepsAndGetTheirSerialResults() throws Exception {
    FakePool pool = new FakePool();
    CountDownLatch release = holdFirstStep(pool);
    try (Engine engine = new Engine(pool)) {
      RequestHandle first = engine.submit(request("a", 3, 256));
      List<RequestHandle> hs = new ArrayList<>(List.of(first));
      hs.add(engine.submit(request("b", 5, 256)));
      hs.add(engine.submit(request("c", 2, 256)));
      hs.add(engine.submit(request("d", 4, 512))); // other shape: never in their batches
      release.countDown();
      int[] steps = {3, 5, 2, 4};
      for (int i = 0; i < hs.size(); i++) {
        assertEquals(expected(steps[i]), value(await(hs.get(i))), "request " + i);
      }
      for (FakePool.Ran r : pool.ranFor("d")) {
        assertEquals(1, r.batchSize(), "d has no partner of its width: " + r);
      }
      assertTrue(pool.ranFor("b").stream().anyMatch(r -> r.batchSize() == 3), "b, c, a batched");
      EngineStats s = engine.stats();
      assertEquals(4, s.completed());
      assertEquals(4, s.admitted());
      long[] sizes = s.batchSizes().cumulativeCounts(); // bounds 1, 2, 4, …
      assertTrue(s.batchSizes().count() > sizes[0], "some batch had more than one unit");
      assertEquals(s.batchSizes().count(), s.costPredictionError().count());
      assertTrue(s.stepSeconds().get(WorkKind.DIFFUSION_STEP).count() > 0);
      assertTrue(s.stepSeconds().get(WorkKind.VAE_TILE).count() > 0);
      assertTrue(s.accepting());
      assertFalse(engine.costModel().entries().isEmpty());
    }
  }

  @Test
  void twoRequestsThatFitAloneButNotTogetherRunOneAfterTheOther() throws Exception {
    FakePool pool = new FakePool();
    EngineConfig c =
        EngineConfig.builder()
            .memoryBudgetBytes(memoryOf(512) + memoryOf(256))
            .computeBudgetMillis(1e9)
            .cacheBlocks(0)
            .build();
    try (Engine engine = new Engine(pool, c)) {
      RequestHandle big = engine.submit(request("big", 3, 512));
      RequestHandle big2 = engine.submit(request("big2", 3, 512));
      RequestHandle small = engine.submit(request("small", 3, 256));
      assertEquals(expected(3), value(await(big)));
      assertEquals(expected(3), value(await(big2)));
      assertEquals(expected(3), value(await(small)));
      // big2 started only after big completed (their memory is the budget's), never beside it.
      List<FakePool.Ran> order = List.copyOf(pool.ran);
      int bigLast = lastIndex(order, "big");
      int big2First = firstIndex(order, "big2");
      assertTrue(big2First > bigLast, "big2 ran beside big: " + order);
      // small waited behind big2 in arrival order, then ran beside it (both fit).
      assertTrue(firstIndex(order, "small") > bigLast);
    }
  }

  @Test
  void aRequestThatCanNeverFitIsRejectedAtSubmit() {
    FakePool pool = new FakePool();
    EngineConfig c =
        EngineConfig.builder()
            .memoryBudgetBytes(memoryOf(256))
            .computeBudgetMillis(1e9)
            .cacheBlocks(0)
            .build();
    try (Engine engine = new Engine(pool, c)) {
      var e =
          assertThrows(
              AdmissionRejectedException.class, () -> engine.submit(request("huge", 2, 512)));
      assertTrue(
          e.getMessage().endsWith("needs 512000 bytes of device memory, the pool has 256000"),
          e.getMessage());
      assertEquals(1, engine.stats().rejected());
    }
  }

  @Test
  void aLongVideoKeepsOneStepPerTickWhileShortRequestsFlow() throws Exception {
    FakePool pool = new FakePool();
    CountDownLatch release = holdFirstStep(pool); // all are queued before the video's 2nd step
    try (Engine engine = new Engine(pool, EngineConfig.builder().maxRunning(3).build())) {
      RequestHandle video = engine.submit(request("video", 30, 512));
      List<RequestHandle> images = new ArrayList<>();
      for (int i = 0; i < 12; i++) {
        images.add(engine.submit(request("image" + i, 2, 256)));
      }
      release.countDown();
      assertEquals(expected(30), value(await(video)));
      for (RequestHandle h : images) {
        assertEquals(expected(2), value(await(h)));
      }
      // Between two consecutive steps of the video, no other request ran more than one step:
      // every tick gives every running loop exactly one step.
      List<FakePool.Ran> order = List.copyOf(pool.ran);
      int prev = -1;
      for (int i = 0; i < order.size(); i++) {
        if (!order.get(i).prompt().equals("video")) {
          continue;
        }
        if (prev >= 0) {
          List<String> between =
              order.subList(prev + 1, i).stream().map(FakePool.Ran::prompt).toList();
          assertEquals(
              between.stream().distinct().count(),
              between.size(),
              "starved at " + i + ": " + between);
        }
        prev = i;
      }
      // and the short requests did flow while the video ran: most finished before it.
      int videoLast = lastIndex(order, "video");
      long imagesDoneBefore =
          images.stream().filter(h -> lastIndex(order, promptOf(h, images)) < videoLast).count();
      assertTrue(imagesDoneBefore >= 10, imagesDoneBefore + " images finished before the video");
    }
  }

  @Test
  void cancellingARunningRequestFreesItsReservationForTheQueue() throws Exception {
    FakePool pool = new FakePool();
    CountDownLatch inStep = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    pool.onStep =
        r -> {
          if (r.prompt().equals("a") && r.step() == 1) {
            inStep.countDown();
            awaitQuietly(release);
          }
        };
    EngineConfig c =
        EngineConfig.builder()
            .memoryBudgetBytes(memoryOf(512))
            .computeBudgetMillis(1e9)
            .cacheBlocks(0)
            .build();
    try (Engine engine = new Engine(pool, c)) {
      RequestHandle a = engine.submit(request("a", 50, 512));
      RequestHandle b = engine.submit(request("b", 2, 512));
      assertTrue(inStep.await(5, TimeUnit.SECONDS));
      assertEquals(1, engine.stats().queued()); // b waits for a's memory
      assertTrue(a.cancel());
      release.countDown();
      var e = assertThrows(ExecutionException.class, () -> a.result().get(5, TimeUnit.SECONDS));
      CancelledException ce = assertInstanceOf(CancelledException.class, e.getCause());
      assertEquals(2, ce.stepsDone());
      assertEquals(
          new RequestEvent.Cancelled(a.requestId(), "denoise", 2), a.eventsSoFar().getLast());
      assertEquals(expected(2), value(await(b)));
      assertEquals(1, engine.stats().cancelled());
      assertEquals(2, pool.ranFor("a").size(), "no step of a after the boundary");
    }
  }

  @Test
  void aQueuedRequestCancelledBeforeAdmissionNeverRuns() throws Exception {
    FakePool pool = new FakePool();
    CountDownLatch release = holdFirstStep(pool);
    EngineConfig c = EngineConfig.builder().maxRunning(1).build();
    try (Engine engine = new Engine(pool, c)) {
      RequestHandle a = engine.submit(request("a", 2, 256));
      RequestHandle b = engine.submit(request("b", 2, 256));
      assertTrue(b.cancel());
      release.countDown();
      assertEquals(expected(2), value(await(a)));
      var e = assertThrows(ExecutionException.class, () -> b.result().get(5, TimeUnit.SECONDS));
      assertInstanceOf(CancelledException.class, e.getCause());
      assertTrue(pool.ranFor("b").isEmpty());
    }
  }

  @Test
  void deadlinesStopRequestsAtAStepBoundaryOrInTheQueue() throws Exception {
    FakePool pool = new FakePool();
    Instant slowDeadline = Instant.now().plusSeconds(1);
    // slow's first step outlasts its deadline, whatever the machine's speed.
    pool.onStep =
        r -> {
          if (r.prompt().equals("slow")) {
            awaitQuietly(() -> Instant.now().isAfter(slowDeadline));
          }
        };
    try (Engine engine = new Engine(pool)) {
      RequestHandle late =
          engine.submitWith(
              request("late", 2, 256),
              RequestOptions.DEFAULT.withDeadline(Instant.now().minusSeconds(1)));
      RequestHandle slow =
          engine.submitWith(
              request("slow", 100, 512), RequestOptions.DEFAULT.withDeadline(slowDeadline));
      RequestHandle fine = engine.submit(request("fine", 3, 256));
      var e1 = assertThrows(ExecutionException.class, () -> late.result().get(5, TimeUnit.SECONDS));
      assertInstanceOf(DeadlineExceededException.class, e1.getCause());
      assertTrue(e1.getCause().getMessage().endsWith("while queued"));
      var e2 =
          assertThrows(ExecutionException.class, () -> slow.result().get(10, TimeUnit.SECONDS));
      assertInstanceOf(DeadlineExceededException.class, e2.getCause());
      assertTrue(e2.getCause().getMessage().contains("steps of loop 'denoise'"));
      assertTrue(pool.ranFor("slow").size() < 100);
      var failed = (RequestEvent.Failed) slow.eventsSoFar().getLast();
      assertFalse(failed.message().contains("\n"));
      assertEquals(expected(3), value(await(fine)));
      assertEquals(2, engine.stats().failed());
    }
  }

  @Test
  void aNonFiniteStepFailsOnlyItsRequestAndKeepsItsPartialState() throws Exception {
    FakePool pool = new FakePool();
    pool.faults.put(new FakePool.At("bad", "denoise", 2), "nan");
    CountDownLatch release = holdFirstStep(pool);
    try (Engine engine = new Engine(pool)) {
      RequestHandle a = engine.submit(request("a", 4, 256));
      RequestHandle bad = engine.submit(request("bad", 4, 256));
      RequestHandle c = engine.submit(request("c", 4, 256));
      release.countDown();
      var e = assertThrows(ExecutionException.class, () -> bad.result().get(5, TimeUnit.SECONDS));
      assertInstanceOf(NonFiniteStepException.class, e.getCause());
      List<RequestEvent> events = bad.eventsSoFar();
      assertEquals(
          new RequestEvent.Failed(
              bad.requestId(),
              "non-finite values in step 3 of loop 'denoise' of request " + bad.requestId()),
          events.getLast());
      var partial = (RequestEvent.ArtifactReady) events.get(events.size() - 2);
      var t = (Artifact.TensorArtifact) partial.artifact();
      assertEquals(expected2(2), t.tensor().getFloat(0)); // its value after its 2 good steps
      assertEquals(expected(4), value(await(a)));
      assertEquals(expected(4), value(await(c)));
      assertTrue(
          pool.ranFor("bad").stream().anyMatch(r -> r.step() == 2 && r.batchSize() == 3),
          "the bad step was batched with the good ones");
      assertEquals(1, engine.stats().failed());
    }
  }

  @Test
  void anExceptionInOneRequestsStepFailsOnlyThatRequestOfTheBatch() throws Exception {
    FakePool pool = new FakePool();
    pool.faults.put(new FakePool.At("bad", "decode", 1), "throw");
    CountDownLatch release = holdFirstStep(pool);
    try (Engine engine = new Engine(pool)) {
      RequestHandle a = engine.submit(request("a", 3, 256));
      RequestHandle bad = engine.submit(request("bad", 3, 256));
      RequestHandle c = engine.submit(request("c", 3, 256));
      release.countDown();
      var e = assertThrows(ExecutionException.class, () -> bad.result().get(5, TimeUnit.SECONDS));
      assertEquals("step of bad blew up\nsecond line", e.getCause().getMessage());
      assertEquals(
          new RequestEvent.Failed(bad.requestId(), "step of bad blew up"),
          bad.eventsSoFar().getLast());
      assertEquals(expected(3), value(await(a)));
      assertEquals(expected(3), value(await(c)));
    }
  }

  @Test
  void aPoolFaultReinitialisesThePoolAndResumesEveryRunningRequestFromItsLastStep()
      throws Exception {
    FakePool pool = new FakePool();
    pool.faults.put(new FakePool.At("b", "denoise", 3), "pool");
    FakePool fresh = new FakePool("fresh");
    List<Throwable> causes = new ArrayList<>();
    EngineConfig c =
        EngineConfig.builder()
            .recoveryCheckpoints(RecoveryCheckpoints.DEFAULT)
            .recovery(
                (broken, cause) -> {
                  causes.add(cause);
                  return fresh;
                })
            .build();
    CountDownLatch release = holdFirstStep(pool);
    try (Engine engine = new Engine(pool, c)) {
      RequestHandle a = engine.submit(request("a", 5, 256));
      RequestHandle b = engine.submit(request("b", 5, 256));
      RequestHandle d = engine.submit(request("d", 6, 512));
      release.countDown();
      assertEquals(expected(5), value(await(a)));
      assertEquals(expected(5), value(await(b)));
      assertEquals(expected(6), value(await(d)));
      assertEquals(1, causes.size());
      assertInstanceOf(PoolFatalException.class, causes.get(0));
      assertEquals(1, engine.poolFaults());
      assertEquals(fresh, engine.model());
      // Resumed from the last step, not restarted: the old pool ran b's denoise steps 0–2 only,
      // the new one ran from step 3 on.
      assertEquals(
          List.of(0, 1, 2),
          pool.ranFor("b").stream()
              .filter(r -> r.loopId().equals("denoise"))
              .map(FakePool.Ran::step)
              .toList());
      assertEquals(
          List.of(3, 4),
          fresh.ranFor("b").stream()
              .filter(r -> r.loopId().equals("denoise"))
              .map(FakePool.Ran::step)
              .toList());
      assertEquals(0, engine.stats().failed());
    }
  }

  @Test
  void aHigherPriorityRequestPreemptsALowerOneWhichResumesFromItsHostCheckpoint() throws Exception {
    FakePool pool = new FakePool();
    CountDownLatch inStep = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    pool.onStep =
        r -> {
          if (r.prompt().equals("low") && r.step() == 2) {
            inStep.countDown();
            awaitQuietly(release);
          }
        };
    EngineConfig c =
        EngineConfig.builder()
            .maxRunning(1)
            .preemption(EngineConfig.Preemption.SERIALIZE_TO_HOST)
            .build();
    try (Engine engine = new Engine(pool, c)) {
      RequestHandle low = engine.submit(request("low", 6, 256));
      assertTrue(inStep.await(5, TimeUnit.SECONDS));
      RequestHandle high =
          engine.submitWith(request("high", 2, 256), RequestOptions.DEFAULT.withPriority(5));
      release.countDown();
      assertEquals(expected(2), value(await(high)));
      assertEquals(expected(6), value(await(low)));
      assertEquals(1, engine.preemptions());
      List<FakePool.Ran> order = List.copyOf(pool.ran);
      assertTrue(lastIndex(order, "high") < lastIndex(order, "low"));
      // no step of low ran twice: it resumed where it stopped
      assertEquals(12, pool.ranFor("low").size());
      assertEquals(
          1, low.eventsSoFar().stream().filter(e -> e instanceof RequestEvent.Started).count());
    }
  }

  @Test
  void drainFinishesWhatWasSubmittedAndRefusesNewRequests() throws Exception {
    FakePool pool = new FakePool();
    try (Engine engine = new Engine(pool)) {
      List<RequestHandle> hs = new ArrayList<>();
      for (int i = 0; i < 5; i++) {
        hs.add(engine.submit(request("r" + i, 3, 256)));
      }
      engine.drain();
      for (RequestHandle h : hs) {
        assertTrue(h.result().isDone());
        assertEquals(expected(3), value(h.result().get()));
      }
      assertFalse(engine.stats().accepting());
      assertThrows(IllegalStateException.class, () -> engine.submit(request("late", 1, 256)));
    }
  }

  @Test
  void drainWithAGracePeriodCancelsWhatIsLeftAtAStepBoundary() throws Exception {
    FakePool pool = new FakePool();
    AtomicReference<RequestHandle> running = new AtomicReference<>();
    // Every step waits for the cancel that ends the grace period, so none finishes before it.
    pool.onStep =
        r -> awaitQuietly(() -> running.get() != null && running.get().cancelScope().isCancelled());
    try (Engine engine = new Engine(pool)) {
      RequestHandle h = engine.submit(request("long", 500, 256));
      running.set(h);
      assertFalse(engine.drain(Duration.ofMillis(100)));
      var e = assertThrows(ExecutionException.class, () -> h.result().get(5, TimeUnit.SECONDS));
      assertInstanceOf(CancelledException.class, e.getCause());
      assertEquals(0, engine.stats().runningLoops());
    }
  }

  /** v after {@code steps} denoise steps from 0. */
  private static float expected2(int steps) {
    float v = 0;
    for (int i = 0; i < steps; i++) {
      v = v * 2 + i;
    }
    return v;
  }

  private static String promptOf(RequestHandle h, List<RequestHandle> images) {
    return "image" + images.indexOf(h);
  }

  private static int firstIndex(List<FakePool.Ran> order, String prompt) {
    for (int i = 0; i < order.size(); i++) {
      if (order.get(i).prompt().equals(prompt)) {
        return i;
      }
    }
    return -1;
  }

  private static int lastIndex(List<FakePool.Ran> order, String prompt) {
    for (int i = order.size() - 1; i >= 0; i--) {
      if (order.get(i).prompt().equals(prompt)) {
        return i;
      }
    }
    return -1;
  }

  private static void awaitQuietly(CountDownLatch l) {
    try {
      l.await(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Waits (at most 10 s, checking every millisecond) until {@code condition} holds. */
  private static void awaitQuietly(BooleanSupplier condition) {
    long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean() && System.nanoTime() < giveUp) {
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
    }
  }
}

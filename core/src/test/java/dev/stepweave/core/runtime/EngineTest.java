package dev.stepweave.core.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.ModelCardTestCards;
import dev.stepweave.core.card.RecipeRefusedException;
import dev.stepweave.core.card.RecipeSpec;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.CancelledException;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.InvalidRequestException;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.request.RequestEvent;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EngineTest {
  private static Request request(int steps) {
    return Request.text(
        TaskType.T2V,
        "count",
        new DiffusionParams(
            steps, 1, 0, 256, 256, 17, 8, "", Optional.of("euler"), Optional.empty()));
  }

  /** denoise: v ← 2v + i for i in 0..n−1 from 0; decode continues from there. */
  private static float expected(int steps) {
    float v = 0;
    for (int loop = 0; loop < 2; loop++) {
      for (int i = 0; i < steps; i++) {
        v = v * 2 + i;
      }
    }
    return v;
  }

  private static float value(GenerationResult r) {
    return r.loopResults().get("decode").tensor("value").getFloat(0);
  }

  @Test
  void runsTheCardsProgramAndPublishesTypedEventsInOrder() throws Exception {
    CountingModel model = new CountingModel(RecipeSpec.base());
    try (Engine engine = new Engine(model)) {
      RequestHandle h = engine.submit(request(3));
      GenerationResult r = h.result().get(10, TimeUnit.SECONDS);
      assertEquals(expected(3), value(r));
      assertEquals(List.of("denoise", "decode"), List.copyOf(r.loopTimings().keySet()));
      List<String> types = new ArrayList<>();
      // A subscriber arriving after the run still gets every event, in order, then completion.
      CompletableFuture<Void> done = new CompletableFuture<>();
      h.events()
          .subscribe(
              new Flow.Subscriber<>() {
                public void onSubscribe(Flow.Subscription s) {
                  s.request(Long.MAX_VALUE);
                }

                public void onNext(RequestEvent e) {
                  types.add(
                      e.type()
                          + (e instanceof RequestEvent.Step s ? ":" + s.loopId() + s.step() : ""));
                }

                public void onError(Throwable t) {
                  done.completeExceptionally(t);
                }

                public void onComplete() {
                  done.complete(null);
                }
              });
      done.get(5, TimeUnit.SECONDS);
      assertEquals(
          List.of(
              "request.queued",
              "request.started",
              "request.step:denoise1",
              "request.step:denoise2",
              "request.step:denoise3",
              "request.step:decode1",
              "request.step:decode2",
              "request.step:decode3",
              "request.completed"),
          types);
    }
  }

  @Test
  void cancellationTakesEffectAtTheNextStepBoundary() throws Exception {
    CountingModel model = new CountingModel(RecipeSpec.base());
    CountDownLatch inStep = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    model.onStep(
        i -> {
          if (i == 2) {
            inStep.countDown();
            await(release);
          }
        });
    try (Engine engine = new Engine(model)) {
      RequestHandle h = engine.submit(request(6));
      assertTrue(inStep.await(5, TimeUnit.SECONDS));
      assertTrue(h.cancel()); // during step 2 of denoise: that step finishes, no later one starts
      release.countDown();
      var e = assertThrows(ExecutionException.class, () -> h.result().get(5, TimeUnit.SECONDS));
      CancelledException c = assertInstanceOf(CancelledException.class, e.getCause());
      assertEquals("denoise", c.loopId());
      assertEquals(3, c.stepsDone());
      RequestEvent last = h.eventsSoFar().getLast();
      assertEquals(new RequestEvent.Cancelled(h.requestId(), "denoise", 3), last);
      assertFalse(h.cancel(), "a finished request cannot be cancelled again");
    }
  }

  @Test
  void aFailingStepFailsTheRequestWithAOneLineEvent() {
    CountingModel model = new CountingModel(RecipeSpec.base());
    model.onStep(
        i -> {
          if (i == 1) {
            throw new IllegalStateException("step blew up\nsecond line");
          }
        });
    try (Engine engine = new Engine(model)) {
      RequestHandle h = engine.submit(request(3));
      var e = assertThrows(ExecutionException.class, () -> h.result().get(5, TimeUnit.SECONDS));
      assertEquals("step blew up\nsecond line", e.getCause().getMessage());
      assertEquals(
          new RequestEvent.Failed(h.requestId(), "step blew up"), h.eventsSoFar().getLast());
    }
  }

  @Test
  void resumingFromAnyStepsCheckpointGivesTheSameResult(@TempDir Path dir) throws Exception {
    CountingModel model = new CountingModel(RecipeSpec.base());
    try (Engine engine = new Engine(model)) {
      Request r = request(4);
      List<Path> files = new ArrayList<>();
      GenerationResult whole =
          engine
              .submit(
                  r,
                  cp -> {
                    Path f = dir.resolve("cp" + files.size() + ".safetensors");
                    cp.write(f);
                    files.add(f);
                  })
              .result()
              .get(10, TimeUnit.SECONDS);
      assertEquals(8, files.size()); // after each of 4 denoise and 4 decode steps
      for (Path f : files) {
        GenerationResult resumed =
            engine.resume(r, ProgramCheckpoint.read(f), null).result().get(10, TimeUnit.SECONDS);
        assertEquals(value(whole), value(resumed), f.toString());
      }
    }
  }

  @Test
  void badRequestsAndRecipeRefusalsFailAtSubmit() {
    CountingModel base = new CountingModel(RecipeSpec.base());
    try (Engine engine = new Engine(base)) {
      assertThrows(InvalidRequestException.class, () -> engine.submit(request(0)));
    }
    CountingModel distilled = new CountingModel(ModelCardTestCards.distilled());
    try (Engine engine = new Engine(distilled)) {
      var e = assertThrows(RecipeRefusedException.class, () -> engine.submit(request(6)));
      assertTrue(e.getMessage().contains("steps 6 (recipe assumes 4)"), e.getMessage());
    }
  }

  private static void await(CountDownLatch l) {
    try {
      l.await(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}

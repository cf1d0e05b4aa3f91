package dev.stepweave.core.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.stepweave.core.card.RecipeSpec;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.loop.ModelInstance;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The backend's cached memory goes back once the pool has been idle for {@link
 * EngineConfig#trimAfterIdle} after a request, once — not after each request while others run or
 * follow at once (each would then allocate every block afresh).
 */
class IdleTrimTest {
  private final AtomicInteger trims = new AtomicInteger();
  private final CountingModel counting = new CountingModel(RecipeSpec.base());

  private static Request request(int steps) {
    return Request.text(
        TaskType.T2V,
        "count",
        new DiffusionParams(
            steps, 1, 0, 256, 256, 17, 8, "", Optional.of("euler"), Optional.empty()));
  }

  /** The counting model on a CPU backend that counts its {@code trim} calls. */
  private ModelInstance model() {
    Backend cpu = new CpuBackend();
    Backend backend =
        (Backend)
            Proxy.newProxyInstance(
                Backend.class.getClassLoader(),
                new Class<?>[] {Backend.class},
                (proxy, method, args) -> {
                  if (method.getName().equals("trim")) {
                    trims.incrementAndGet();
                  }
                  return invoke(method, cpu, args);
                });
    return (ModelInstance)
        Proxy.newProxyInstance(
            ModelInstance.class.getClassLoader(),
            new Class<?>[] {ModelInstance.class},
            (proxy, method, args) ->
                method.getName().equals("backend") ? backend : invoke(method, counting, args));
  }

  private static Object invoke(java.lang.reflect.Method method, Object target, Object[] args)
      throws Throwable {
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  private static EngineConfig after(Duration idle) {
    return EngineConfig.builder().trimAfterIdle(idle).build();
  }

  @Test
  void anIdlePoolTrimsOnceAfterTheDelay() throws Exception {
    // Delays far above a loaded machine's pause between two calls, so only the waits below count.
    try (Engine engine = new Engine(model(), after(Duration.ofSeconds(1)))) {
      // Submitted together, so the pool is never idle between them.
      var first = engine.submit(request(2));
      var second = engine.submit(request(3));
      first.result().get(10, TimeUnit.SECONDS);
      second.result().get(10, TimeUnit.SECONDS);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (trims.get() == 0 && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertEquals(1, trims.get(), "one trim once idle");
      Thread.sleep(1500);
      assertEquals(1, trims.get(), "no further trim without another request");
      engine.submit(request(1)).result().get(10, TimeUnit.SECONDS);
      deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (trims.get() == 1 && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertEquals(2, trims.get(), "a request after the trim makes the next one due");
    }
  }

  @Test
  void noTrimWhileAnotherRequestRunsOrBeforeTheDelay() throws Exception {
    CountDownLatch blocked = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    counting.onStep(
        i -> {
          // Only the 3-step request has a step 2; the 1-step one has completed by then.
          if (i == 2 && blocked.getCount() > 0) {
            blocked.countDown();
            try {
              release.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
          }
        });
    try (Engine engine = new Engine(model(), after(Duration.ofMillis(500)))) {
      var shortOne = engine.submit(request(1));
      var longOne = engine.submit(request(3));
      shortOne.result().get(10, TimeUnit.SECONDS);
      blocked.await(10, TimeUnit.SECONDS);
      Thread.sleep(800); // past the delay since the short one completed, but the pool is busy
      assertEquals(0, trims.get(), "no trim while a request runs");
      release.countDown();
      longOne.result().get(10, TimeUnit.SECONDS);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (trims.get() == 0 && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertEquals(1, trims.get(), "one trim once both are done and the pool idles");
    }
    try (Engine engine = new Engine(model(), after(Duration.ofHours(1)))) {
      engine.submit(request(1)).result().get(10, TimeUnit.SECONDS);
      Thread.sleep(200);
      assertEquals(1, trims.get(), "no trim before the pool has been idle long enough");
    }
  }

  @Test
  void aNegativeDelayIsRefused() {
    var e =
        assertThrows(
            IllegalArgumentException.class,
            () -> EngineConfig.builder().trimAfterIdle(Duration.ofSeconds(-1)).build());
    assertEquals("trimAfterIdle must be >= 0, got PT-1S", e.getMessage());
  }
}

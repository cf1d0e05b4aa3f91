package dev.stepweave.core.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.RecipeSpec;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.extend.CallInfo;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.extend.Profiler;
import dev.stepweave.core.loop.ResourceRequest;
import dev.stepweave.core.loop.ShapeSignature;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.tensor.Precision;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The cost model is calibrated by what a profiler measures. */
class ProfilerCalibrationTest {
  static final ShapeSignature SHAPE = ShapeSignature.of("s", 1);

  @Test
  void aProfilersMeasuredCallsMoveTheCostModelsEstimateTowardThemAfterTheFirst() {
    CostModel cost = new CostModel(1e8, 1e7);
    ResourceRequest unit = new ResourceRequest(100, 0, 0, 0);
    CostModel.Key key = new CostModel.Key("m", WorkKind.DIFFUSION_STEP, SHAPE, Precision.F32, 1);
    Profiler profiler = new Profiler(cost);
    CallInfo call = new CallInfo("m", WorkKind.DIFFUSION_STEP, SHAPE, Precision.F32, 1, unit);
    assertEquals(100, cost.predict(key, unit), 1e-9); // static until measured

    profiler.afterCall(call, Duration.ofMillis(90)); // a first call: one-off costs included
    assertEquals(90, cost.predict(key, unit), 1e-9);
    profiler.afterCall(call, Duration.ofMillis(40)); // replaces the first
    assertEquals(40, cost.predict(key, unit), 1e-9);
    profiler.afterCall(call, Duration.ofMillis(60));
    assertEquals(40 + CostModel.ALPHA * 20, cost.predict(key, unit), 1e-9);
    // Another kind is a key of its own: untouched.
    CostModel.Key vae = new CostModel.Key("m", WorkKind.VAE_TILE, SHAPE, Precision.F32, 1);
    assertEquals(100, cost.predict(vae, unit), 1e-9);

    Profiler.CallMeasurement m = profiler.callMeasurements().getFirst();
    assertEquals(3, m.count());
    assertEquals(190 / 3.0, m.meanMillis(), 1e-9);
  }

  @Test
  void theEnginesProfilerCalibratesItsCostModelWithMeasuredSteps() throws Exception {
    long stepMillis = 20;
    CountingModel model = new CountingModel(RecipeSpec.base());
    model.onStep(
        i -> {
          try {
            Thread.sleep(stepMillis);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });
    Profiler deployed = new Profiler();
    Extensions observed = Extensions.builder().observe(deployed).build();
    try (Engine engine = new Engine(model, EngineConfig.defaults(), observed)) {
      CostModel.Entry before = entry(engine);
      assertEquals(null, before, "nothing measured yet");
      engine.submit(request(6)).result().get(30, TimeUnit.SECONDS);

      CostModel.Entry after = entry(engine);
      // The static estimate of a unit with no FLOPs is 0 ms; measured, it is the sleep and more.
      assertEquals(0, after.staticMillis(), 1e-9);
      assertTrue(after.predictedMillis() >= stepMillis, after.toString());
      Profiler.CallMeasurement calls =
          engine.profiler().callMeasurements().stream()
              .filter(c -> c.kind() == WorkKind.DIFFUSION_STEP && c.batchSize() == 1)
              .findFirst()
              .orElseThrow();
      assertEquals(calls.count(), after.samples(), "every measured call calibrated the model");
      assertTrue(calls.meanMillis() >= stepMillis, calls.toString());
    }
    // The deployment's profiler saw the same steps, each with its measured (not zero) time.
    Profiler.Measurement denoise =
        deployed.measurements().stream()
            .filter(m -> m.loopId().equals("denoise"))
            .findFirst()
            .orElseThrow();
    assertEquals(6, denoise.count());
    assertTrue(denoise.meanMillis() >= stepMillis, denoise.toString());
    assertTrue(
        deployed.callMeasurements().stream().mapToLong(Profiler.CallMeasurement::count).sum() >= 6);
  }

  private static CostModel.Entry entry(Engine engine) {
    return engine.costModel().entries().stream()
        .filter(e -> e.key().kind() == WorkKind.DIFFUSION_STEP && e.key().batchSize() == 1)
        .findFirst()
        .orElse(null);
  }

  private static Request request(int steps) {
    return Request.text(
        TaskType.T2V,
        "a cat",
        new DiffusionParams(
            steps, 1, 0, 256, 256, 17, 8, "", Optional.of("euler"), Optional.empty()));
  }
}

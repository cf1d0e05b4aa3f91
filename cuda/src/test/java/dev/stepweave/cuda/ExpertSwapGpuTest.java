package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.extend.StepInfo;
import dev.stepweave.core.extend.StepObserver;
import dev.stepweave.core.parity.Comparison;
import dev.stepweave.core.parity.ParityReport;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.EngineConfig;
import dev.stepweave.models.parity.RecordingVerifier;
import dev.stepweave.models.wan.ExpertResidency;
import dev.stepweave.models.wan.WanCards;
import dev.stepweave.models.wan.WanLoadOptions;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.tensor.ComponentMemory;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The two-expert pipeline with its experts one awake at a time (issue 12, {@code --experts swap}):
 * the golden recording of the tiny two-expert checkpoint within the BF16 bound (relative L2 1e-2,
 * as {@code GoldenBf16GpuTest} holds it with both resident), and while either expert's steps run,
 * the other's pool is parked in host memory ({@link ComponentMemory#asleep}), with one switch at
 * the boundary.
 */
@Tag("gpu")
class ExpertSwapGpuTest {
  private static final Path GOLDEN =
      Path.of(System.getProperty("stepweave.golden", "testdata/golden"));
  private static final Path MOE = GOLDEN.resolve("wan22-moe-tiny");
  private static final WanLoadOptions SWAP = new WanLoadOptions(ExpertResidency.ONE_AT_A_TIME);
  private static final double BOUND = 1e-2;

  @Test
  void theTwoExpertPipelineOneExpertAtATimeIsWithinTheBf16Bound() {
    ParityReport report =
        new RecordingVerifier(MOE, Gpu.bf16(), System.out::println, SWAP)
            .verify(GOLDEN.resolve("wan22-moe-tiny-expected"), c -> {});
    assertEquals(List.of(), report.errors());
    assertTrue(report.comparisons().size() >= 5, "comparisons: " + report.comparisons().size());
    for (Comparison c : report.comparisons()) {
      System.out.printf("  %-48s rel L2 %.2e (bound %.0e)%n", c.name(), c.relativeL2Error(), BOUND);
      assertTrue(c.relativeL2Error() <= BOUND, c.name() + ": relative L2 " + c.relativeL2Error());
    }
  }

  @Test
  void theIdleExpertSleepsThroughTheOtherExpertsSteps() throws Exception {
    try (WanModel model = WanModel.load(MOE, Gpu.bf16(), SWAP)) {
      assertEquals(ExpertResidency.ONE_AT_A_TIME, model.expertChoice().residency());
      assertTrue(model.componentMemory().get("transformer_2").asleep(), "loaded awake");
      assertFalse(model.componentMemory().get("transformer").asleep(), "loaded asleep");
      Request request =
          Request.builder(
                  TaskType.T2V,
                  new DiffusionParams(
                      8, 4.0, 7, 48, 32, 9, 8, "blurry", Optional.empty(), Optional.empty()))
              .prompt("a red ball bouncing")
              .nodeOverrides(
                  Map.of(
                      WanCards.TEXT_ENCODE,
                      Map.of("max_sequence_length", "16"),
                      WanCards.DENOISE,
                      Map.of("guidance_2", "3.0")))
              .build();
      List<String> experts = model.expertsPerStep(request);
      assertEquals(Set.of("transformer", "transformer_2"), Set.copyOf(experts));
      List<String> wrong = new ArrayList<>();
      StepObserver asleepMeanwhile =
          new StepObserver() {
            @Override
            public void afterStep(StepInfo step, Duration elapsed) {
              if (!step.loopId().equals(WanCards.DENOISE)) {
                return;
              }
              String ran = experts.get(step.stepIndex());
              String idle = ran.equals("transformer") ? "transformer_2" : "transformer";
              Map<String, ComponentMemory> memory = model.componentMemory();
              if (memory.get(ran).asleep() || !memory.get(idle).asleep()) {
                wrong.add("step " + step.stepIndex() + " of " + ran + ": " + memory);
              }
            }
          };
      try (Engine engine =
          new Engine(
              model,
              EngineConfig.defaults(),
              Extensions.builder().observe(asleepMeanwhile).build())) {
        engine.submit(request).result().get(300, TimeUnit.SECONDS);
        var switches = engine.stats().componentSwitchSeconds();
        System.out.printf("  %d switch(es), %.3f s in all%n", switches.count(), switches.sum());
        assertEquals(1, switches.count());
      }
      assertEquals(List.of(), wrong);
    }
  }
}

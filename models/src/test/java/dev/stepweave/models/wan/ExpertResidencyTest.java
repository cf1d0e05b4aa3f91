package dev.stepweave.models.wan;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.extend.StepInfo;
import dev.stepweave.core.extend.StepObserver;
import dev.stepweave.core.memory.MemoryBudget;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.EngineConfig;
import dev.stepweave.core.runtime.RequestHandle;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A two-expert checkpoint on a device too small for both experts (issue 12): {@code auto} keeps
 * them one awake at a time only where the device cannot hold both beside the other weights and the
 * card's default request; then the load never holds both awake, the admission budget counts one
 * expert, the engine switches before the first step of the sleeping expert, and the frames are
 * those of both resident, bit for bit (text- and image-to-video); requests in different phases
 * interleave with a single switch. Run on a {@link SimulatedDevice}, which fails when both experts
 * are awake at once or a sleeping expert's weight is read.
 */
class ExpertResidencyTest {
  private static final Path MOE = TwoExpertTest.CHECKPOINT;
  // Device sizes below are exact: no headroom.
  private static final WanLoadOptions AUTO =
      new WanLoadOptions(ExpertResidency.AUTO, OptionalLong.of(0));
  private static final WanLoadOptions SWAP = new WanLoadOptions(ExpertResidency.ONE_AT_A_TIME);

  private static long others; // the text encoder's and the VAE's pools
  private static long expert; // one expert's pool
  private static long defaultRequest; // what the card's default request reserves
  private static WanModel resident; // on the CPU: both experts resident

  @BeforeAll
  static void measure() {
    resident = WanModel.load(MOE, new CpuBackend());
    SimulatedDevice huge = new SimulatedDevice(1L << 40, false);
    try (WanModel model = WanModel.load(MOE, huge.backend)) {
      Map<String, Long> pools = huge.poolBytes();
      others = pools.get("text_encoder") + pools.get("vae");
      expert = pools.get("transformer");
      assertEquals(expert, pools.get("transformer_2"));
      defaultRequest = model.footprint(model.defaultRequest()).memoryBytes();
    }
  }

  @AfterAll
  static void close() {
    resident.close();
  }

  /** A device with room for the other weights, the default request and {@code experts} experts. */
  private static SimulatedDevice device(double experts, boolean takeTurns) {
    return new SimulatedDevice(others + defaultRequest + (long) (experts * expert), takeTurns);
  }

  private static Request request(String id, long seed, int steps, int width) {
    return Request.builder(
            TaskType.T2V,
            new DiffusionParams(
                steps, 4.0, seed, width, 32, 9, 8, "blurry", Optional.empty(), Optional.empty()))
        .id(id)
        .prompt("a red ball bouncing")
        .nodeOverrides(
            Map.of(
                WanCards.TEXT_ENCODE,
                Map.of("max_sequence_length", "16"),
                WanCards.DENOISE,
                Map.of("guidance_2", "3.0")))
        .build();
  }

  private static long switches(Engine engine) {
    return engine.stats().componentSwitchSeconds().count();
  }

  @Test
  void autoKeepsBothExpertsWhereTheyFitAndOneAtATimeWhereTheyDoNot() {
    assertEquals(
        new ExpertChoice(
            ExpertResidency.RESIDENT, "auto: the backend has no device memory to save"),
        resident.expertChoice());
    assertTrue(resident.swappedComponents().isEmpty());

    SimulatedDevice large = device(4, false);
    try (WanModel model = WanModel.load(MOE, large.backend, AUTO)) {
      assertEquals(ExpertResidency.RESIDENT, model.expertChoice().residency());
      assertTrue(
          model.expertChoice().reason().contains(") fit the"), model.expertChoice().reason());
      assertTrue(model.swappedComponents().isEmpty());
      assertEquals(
          List.of("load text_encoder", "load vae", "load transformer_2", "load transformer"),
          large.events());
      MemoryBudget budget = MemoryBudget.measure(model, OptionalLong.of(0)).orElseThrow();
      assertEquals(others + 2 * expert, budget.componentBytes());
    }

    SimulatedDevice small = device(1.5, true);
    try (WanModel model = WanModel.load(MOE, small.backend, AUTO)) {
      assertEquals(ExpertResidency.ONE_AT_A_TIME, model.expertChoice().residency());
      assertTrue(
          model.expertChoice().reason().contains(") do not fit the"),
          model.expertChoice().reason());
      // The low-noise expert loads first and sleeps before the high-noise one loads: the load
      // never holds both, and the first request's first step finds its expert awake.
      assertEquals(
          List.of(
              "load text_encoder",
              "load vae",
              "load transformer_2",
              "sleep transformer_2",
              "load transformer"),
          small.events());
      assertTrue(small.asleep("transformer_2"));
      assertFalse(small.asleep("transformer"));
      assertEquals(Optional.of("transformer"), model.swappedComponents().orElseThrow().awake());
      // The budget counts one expert: the default request fits beside it.
      MemoryBudget budget = MemoryBudget.measure(model, OptionalLong.of(0)).orElseThrow();
      assertEquals(others + expert, budget.componentBytes());
      assertTrue(budget.requestBytes() >= defaultRequest, budget.describe());
    }
    assertEquals(List.of(), large.violations());
    assertEquals(List.of(), small.violations());
  }

  @Test
  void oneAtATimeGivesTheResidentFramesBitForBitAndTheIdleExpertSleepsThroughTheOthersSteps()
      throws Exception {
    Request r = request("r", 5, 8, 48);
    List<String> experts = resident.expertsPerStep(r);
    assertEquals(Set.of("transformer", "transformer_2"), Set.copyOf(experts));
    float[] bothAwake;
    try (Engine engine = new Engine(resident)) {
      bothAwake = ServedAlone.frames(engine.submit(r));
    }
    SimulatedDevice small = device(1.5, true);
    List<String> wrong = new ArrayList<>();
    StepObserver asleepMeanwhile =
        new StepObserver() {
          @Override
          public void afterStep(StepInfo step, Duration elapsed) {
            if (step.loopId().equals(WanCards.DENOISE)) {
              String ran = experts.get(step.stepIndex());
              String idle = ran.equals("transformer") ? "transformer_2" : "transformer";
              if (small.asleep(ran) || !small.asleep(idle)) {
                wrong.add("step " + step.stepIndex() + " of " + ran);
              }
            }
          }
        };
    try (WanModel model = WanModel.load(MOE, small.backend, SWAP);
        Engine engine =
            new Engine(
                model,
                EngineConfig.defaults(),
                Extensions.builder().observe(asleepMeanwhile).build())) {
      int loaded = small.events().size();
      assertArrayEquals(bothAwake, ServedAlone.frames(engine.submit(r)));
      assertEquals(1, switches(engine));
      assertEquals(
          List.of("sleep transformer", "wake transformer_2"),
          small.events().subList(loaded, small.events().size()));
    }
    assertEquals(List.of(), wrong);
    assertEquals(List.of(), small.violations());
  }

  @Test
  void oneAtATimeGivesTheResidentFramesOfTwoExpertImageToVideo(@TempDir Path dir) throws Exception {
    Path checkpoint = TwoExpertImageToVideoTest.checkpoint(dir);
    Request r = ImageToVideoTest.request("i", ImageToVideoTest.image(61, 45, 1), 3, 32, 48, 6, 4.0);
    float[] bothAwake;
    try (WanModel model = WanModel.load(checkpoint, new CpuBackend());
        Engine engine = new Engine(model)) {
      assertEquals(Set.of("transformer", "transformer_2"), Set.copyOf(model.expertsPerStep(r)));
      bothAwake = ServedAlone.frames(engine.submit(r));
    }
    SimulatedDevice device = new SimulatedDevice(1L << 30, true);
    try (WanModel model = WanModel.load(checkpoint, device.backend, SWAP);
        Engine engine = new Engine(model)) {
      assertArrayEquals(bothAwake, ServedAlone.frames(engine.submit(r)));
      assertEquals(1, switches(engine));
    }
    assertEquals(List.of(), device.violations());
  }

  @Test
  void requestsInDifferentPhasesInterleaveWithOneSwitchAndGiveTheirFramesAlone() throws Exception {
    // Different step counts switch experts at different steps, so the phases overlap.
    List<Request> mix =
        List.of(request("a", 1, 12, 48), request("b", 2, 4, 32), request("c", 3, 8, 48));
    List<Integer> firstLowNoise =
        mix.stream().map(r -> resident.expertsPerStep(r).indexOf("transformer_2")).toList();
    assertNotEquals(1, firstLowNoise.stream().distinct().count(), firstLowNoise.toString());
    SimulatedDevice small = device(1.5, true);
    try (WanModel model = WanModel.load(MOE, small.backend, SWAP)) {
      List<float[]> alone = new ArrayList<>();
      try (Engine engine = new Engine(model)) {
        for (Request r : mix) {
          alone.add(ServedAlone.frames(engine.submit(r)));
        }
        // One at a time, each request switches to the low-noise expert and the next one back.
        assertEquals(2L * mix.size() - 1, switches(engine));
      }
      // Steps of the sleeping expert wait while the awake one has work: one switch in all.
      EngineConfig patient =
          EngineConfig.builder().switchDeferral(Double.POSITIVE_INFINITY).build();
      assertEquals(1, interleaved(model, patient, mix, alone));
      // Never passed over, they switch once every tick both phases share: the same frames, at as
      // many switches as serving them one at a time.
      EngineConfig eager = EngineConfig.builder().switchDeferral(0).build();
      assertEquals(5, interleaved(model, eager, mix, alone));
    }
    assertEquals(List.of(), small.violations());
  }

  /** Serves {@code mix} at once, checks each request's frames are {@code alone}'s; the switches. */
  private static long interleaved(
      WanModel model, EngineConfig config, List<Request> mix, List<float[]> alone)
      throws Exception {
    model.wake("transformer"); // as after loading (the runs before ended on the other expert)
    try (Engine engine = new Engine(model, config)) {
      List<RequestHandle> handles = engine.submitAll(mix);
      for (int i = 0; i < mix.size(); i++) {
        assertArrayEquals(alone.get(i), ServedAlone.frames(handles.get(i)), mix.get(i).id());
      }
      return switches(engine);
    }
  }

  @Test
  void theSimulatedDeviceFailsOnBothExpertsAwakeAndOnASleepingWeightRead() {
    SimulatedDevice device = device(1.5, true);
    try (WanModel model = WanModel.load(MOE, device.backend, SWAP)) {
      // Listed in the card's order, not the order of loading (the idle expert loads last).
      assertEquals(
          List.of("text_encoder", "transformer", "transformer_2", "vae"),
          List.copyOf(model.componentMemory().keySet()));
      String second = model.instanceId() + "/transformer_2";
      assertThrows(IllegalStateException.class, () -> device.backend.wakeComponent(second));
      model.sleep("text_encoder");
      var tokens = model.tokenizer().encode(List.of("a red ball"), 16);
      // component() hands the encoder over without waking it, as no step does.
      var encoder = model.component("text_encoder", dev.stepweave.models.text.UMT5Encoder.class);
      assertThrows(
          IllegalStateException.class,
          () -> encoder.encode(tokens.inputIds(), tokens.attentionMask()));
    }
    assertEquals(2, device.violations().size(), device.violations().toString());
    assertTrue(device.violations().get(0).startsWith("both experts awake"));
    assertTrue(device.violations().get(1).endsWith("a weight of text_encoder, which sleeps"));
  }

  @Test
  void aPolicyIsResidentSwapOrAutoAndOneExpertStaysResident() {
    assertEquals(ExpertResidency.ONE_AT_A_TIME, ExpertResidency.parse("swap"));
    assertEquals(ExpertResidency.AUTO, ExpertResidency.parse("Auto"));
    var e = assertThrows(IllegalArgumentException.class, () -> ExpertResidency.parse("fast"));
    assertEquals(
        "unknown expert residency 'fast' (available: resident, swap, auto)", e.getMessage());
    SimulatedDevice device = new SimulatedDevice(1L << 30, false);
    try (WanModel single =
        WanModel.load(
            Path.of(System.getProperty("stepweave.golden"), "wan21-tiny"), device.backend, SWAP)) {
      assertEquals(new ExpertChoice(ExpertResidency.RESIDENT, "one expert"), single.expertChoice());
      assertTrue(single.swappedComponents().isEmpty());
    }
  }
}

package dev.stepweave.models.wan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.InvalidRequestException;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A two-expert (Wan2.2 A14B-style) checkpoint: the routing switches at the boundary, each expert
 * with its own guidance scale; requests in different phases interleave and batch (only within an
 * expert) and give their serial frames bit for bit; the second scale is refused on a one-expert
 * model.
 */
class TwoExpertTest {
  static final Path CHECKPOINT = Path.of(System.getProperty("stepweave.golden"), "wan22-moe-tiny");
  private static WanModel model;

  @BeforeAll
  static void load() {
    model = WanModel.load(CHECKPOINT, new CpuBackend());
  }

  @AfterAll
  static void close() {
    model.close();
  }

  private static Request request(String id, long seed, int steps, String guidance2) {
    return Request.builder(
            TaskType.T2V,
            new DiffusionParams(
                steps, 4.0, seed, 48, 32, 9, 8, "blurry", Optional.empty(), Optional.empty()))
        .id(id)
        .prompt("a red ball bouncing")
        .nodeOverrides(
            Map.of(
                WanCards.TEXT_ENCODE,
                Map.of("max_sequence_length", "16"),
                WanCards.DENOISE,
                guidance2 == null ? Map.of() : Map.of("guidance_2", guidance2)))
        .build();
  }

  @Test
  void theRoutingSwitchesOnceAtTheBoundaryAndTheCardListsBothExperts() {
    List<String> experts = model.expertsPerStep(request("r", 0, 8, "3.0"));
    assertEquals(8, experts.size());
    int first = experts.indexOf("transformer_2");
    assertTrue(first > 0, "the first steps run the high-noise expert: " + experts);
    assertTrue(
        experts.subList(first, 8).stream().allMatch("transformer_2"::equals),
        "no switch back: " + experts);
    assertEquals(
        List.of("text_encoder", "transformer", "transformer_2", "vae"), model.weightComponents());
    assertEquals(
        List.of("transformer", "transformer_2", "scheduler"),
        model.card().loops().get(WanCards.DENOISE).components());
  }

  @Test
  void requestsInDifferentPhasesInterleaveAndGiveTheirSerialFramesBitForBit() throws Exception {
    List<Request> mix =
        List.of(request("a", 1, 8, "3.0"), request("b", 2, 6, null), request("c", 3, 8, "1.0"));
    assertTrue(
        ServedAlone.assertConcurrentRunGivesSerialFrames(() -> new Engine(model), mix) > 0,
        "nothing batched");
    float[] first;
    try (Engine engine = new Engine(model)) {
      first = ServedAlone.frames(engine.submit(mix.get(0)));
    }
    try (Engine engine = new Engine(model)) {
      assertNotEquals(
          java.util.Arrays.hashCode(first),
          java.util.Arrays.hashCode(ServedAlone.frames(engine.submit(request("a2", 1, 8, "4.0")))),
          "the second expert's guidance scale changes the frames");
    }
  }

  @Test
  void aSecondGuidanceScaleNeedsTwoExpertsAndAValidNumber() {
    var e =
        assertThrows(InvalidRequestException.class, () -> model.validate(request("x", 0, 4, "-1")));
    assertEquals("guidance_2 must be a finite number >= 0, got -1.0", e.getMessage());
    try (WanModel single =
        WanModel.load(
            Path.of(System.getProperty("stepweave.golden"), "wan21-tiny"), new CpuBackend())) {
      var one =
          assertThrows(
              InvalidRequestException.class, () -> single.validate(request("y", 0, 4, "3.0")));
      assertEquals(
          "denoise.guidance_2 needs a two-expert model; 'wan21-tiny' has one transformer",
          one.getMessage());
    }
  }
}

package dev.stepweave.core.card;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.Precision;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ModelCardTest {

  @Test
  void aConsistentCardValidatesAndRoundTripsThroughJson(@TempDir Path dir) throws Exception {
    ModelCard card = ModelCardTestCards.card(ModelCardTestCards.distilled()).validate("test");
    Path file = dir.resolve(CardJson.FILE_NAME);
    CardJson.write(card, file);
    assertEquals(card, CardJson.read(file));
  }

  @Test
  void recipeTeethRefuseOtherStepsSamplerAndPrecisionNamingBoth() {
    ModelCard card = ModelCardTestCards.card(ModelCardTestCards.distilled());
    var e =
        assertThrows(
            RecipeRefusedException.class,
            () -> card.admitSettings("unipc", 50, 5.0, Precision.F32, ConsistencyRung.C1, false));
    assertEquals(
        "model 'tiny-4step' (recipe 'dmd2') refuses sampler unipc (recipe assumes euler), steps 50 (recipe"
            + " assumes 4), precision f32 (recipe assumes bf16); override the recipe explicitly to run it anyway",
        e.getMessage());
    assertEquals(3, e.mismatches().size());
    // What the recipe assumes passes; an explicit override passes and reports what it overrode.
    assertEquals(
        List.of(), card.admitSettings("euler", 4, 5.0, Precision.BF16, ConsistencyRung.C1, false));
    assertEquals(
        1, card.admitSettings("euler", 8, 5.0, Precision.BF16, ConsistencyRung.C1, true).size());
  }

  @Test
  void aBaseRecipeAssumesNothing() {
    assertEquals(
        List.of(),
        ModelCardTestCards.card(RecipeSpec.base())
            .admitSettings("unipc", 1000, 5.0, Precision.F32, ConsistencyRung.C3, false));
  }

  @Test
  void aRunLooserThanTheRecipesRungIsRefusedNamingBoth() {
    ModelCard card = ModelCardTestCards.card(ModelCardTestCards.distilled());
    var e =
        assertThrows(
            RecipeRefusedException.class,
            () -> card.admitSettings("euler", 4, 5.0, Precision.BF16, ConsistencyRung.C3, false));
    assertEquals(
        "model 'tiny-4step' (recipe 'dmd2') refuses consistency rung C3 (recipe assumes C1);"
            + " override the recipe explicitly to run it anyway",
        e.getMessage());
    // A stricter run than required passes, and an override records what it overrode.
    assertEquals(
        List.of(), card.admitSettings("euler", 4, 5.0, Precision.BF16, ConsistencyRung.C0, false));
    assertEquals(
        List.of(new RecipeSpec.RecipeMismatch("consistency rung", "C1", "C3")),
        card.admitSettings("euler", 4, 5.0, Precision.BF16, ConsistencyRung.C3, true));
  }

  @Test
  void aCardWhoseParityRungIsLooserThanItsRecipeNeedsIsInvalid() {
    ModelCard good = ModelCardTestCards.card(ModelCardTestCards.distilled());
    ModelCard loose =
        new ModelCard(
            good.modelId(),
            good.family(),
            good.components(),
            good.loops(),
            good.capabilities(),
            good.recipe(),
            new ParitySpec(ConsistencyRung.C3, List.of(), Map.of()),
            good.caches(),
            good.parallelism(),
            good.precision(),
            good.checkpoint(),
            good.defaults());
    var e = assertThrows(InvalidCardException.class, () -> loose.validate("card.json"));
    assertEquals(
        "card.json: parity spec holds the card to C3, looser than its recipe requires (C1)",
        e.getMessage());
    assertEquals(CardProblem.Code.RUNG_BELOW_RECIPE, e.problems().getFirst().code());
  }

  @Test
  void theParitySpecIsWhereTheBoundsAreLookedUp() {
    ParitySpec parity = ModelCardTestCards.card(RecipeSpec.base()).parity();
    assertEquals(new dev.stepweave.core.parity.Tolerance.MaxAbs(1e-4), parity.tolerance("dit"));
    var e = assertThrows(IllegalArgumentException.class, () -> parity.tolerance("frames"));
    assertEquals(
        "the card's parity spec has no tolerance for 'frames' (it declares [dit])", e.getMessage());
  }

  @Test
  void inconsistenciesAreTypedProblemsFoundBeforeLoading() {
    ModelCard good = ModelCardTestCards.card(ModelCardTestCards.distilled());
    ModelCard bad =
        new ModelCard(
            good.modelId(),
            good.family(),
            good.components(),
            Map.of(
                "denoise",
                new LoopSpec("denoise", WorkKind.DIFFUSION_STEP, List.of("dit", "text_encoder"))),
            Map.of(TaskType.T2V, List.of("denoise", "decode")),
            new RecipeSpec(
                "dmd2", List.of(), "test", "sde", null, null, Precision.F16, ConsistencyRung.C1),
            good.parity(),
            good.caches(),
            good.parallelism(),
            good.precision(),
            good.checkpoint(),
            good.defaults());
    var e = assertThrows(InvalidCardException.class, () -> bad.validate("card.json"));
    var codes = e.problems().stream().map(CardProblem::code).toList();
    assertTrue(codes.contains(CardProblem.Code.UNKNOWN_COMPONENT), codes.toString());
    assertTrue(codes.contains(CardProblem.Code.UNKNOWN_LOOP), codes.toString());
    assertTrue(codes.contains(CardProblem.Code.UNSUPPORTED_PRECISION), codes.toString());
    assertTrue(e.getMessage().startsWith("card.json: "), e.getMessage());
    assertEquals(1, e.getMessage().lines().count());
  }

  @Test
  void unreadableJsonIsAOneLineCardError(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("card.json");
    Files.writeString(file, "{\"modelId\": \"x\", \"surprise\": 1}");
    var e = assertThrows(InvalidCardException.class, () -> CardJson.read(file));
    assertEquals(CardProblem.Code.UNREADABLE, e.problems().getFirst().code());
    assertEquals(1, e.getMessage().lines().count());
  }

  @Test
  void aTaskTheCardDoesNotServeIsRefused() {
    var e =
        assertThrows(
            IllegalArgumentException.class,
            () -> ModelCardTestCards.card(RecipeSpec.base()).loopsFor(TaskType.T2I));
    assertTrue(e.getMessage().contains("cannot run task t2i"), e.getMessage());
  }

  @Test
  void aCfgFreeRecipeRefusesGuidanceAndTakesAnyScaleUpToOne() {
    RecipeSpec student =
        new RecipeSpec(
            "distill",
            List.of("wan-base"),
            "test",
            "denoise",
            "euler",
            4,
            null,
            ConsistencyRung.C3,
            null,
            null,
            1.0);
    assertEquals(
        List.of("guidance 5.0 (recipe assumes 1.0)"),
        student.mismatches("euler", 4, 5.0, Precision.F32, ConsistencyRung.C1).stream()
            .map(Object::toString)
            .toList());
    // Every scale up to 1 runs the conditional branch alone: the same setting.
    assertTrue(student.mismatches("euler", 4, 1.0, Precision.F32, ConsistencyRung.C1).isEmpty());
    assertTrue(student.mismatches("euler", 4, 0.0, Precision.F32, ConsistencyRung.C1).isEmpty());
    RecipeSpec guided =
        new RecipeSpec(
            "distill",
            List.of(),
            "test",
            null,
            null,
            null,
            null,
            ConsistencyRung.C3,
            null,
            null,
            3.0);
    assertEquals(1, guided.mismatches("euler", 4, 5.0, Precision.F32, ConsistencyRung.C1).size());
    assertTrue(guided.mismatches("euler", 4, 3.0, Precision.F32, ConsistencyRung.C1).isEmpty());
    assertTrue(
        RecipeSpec.base().mismatches("unipc", 50, 7.5, Precision.F32, ConsistencyRung.C3).isEmpty(),
        "a recipe without the assumption takes any scale");
  }
}

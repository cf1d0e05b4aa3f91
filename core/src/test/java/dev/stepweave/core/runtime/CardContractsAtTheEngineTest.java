package dev.stepweave.core.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.stepweave.core.card.CacheContract;
import dev.stepweave.core.card.CardProblem;
import dev.stepweave.core.card.ConsistencyRung;
import dev.stepweave.core.card.InvalidCardException;
import dev.stepweave.core.card.ModelCard;
import dev.stepweave.core.card.ModelCardTestCards;
import dev.stepweave.core.card.RecipeRefusedException;
import dev.stepweave.core.card.RecipeSpec;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.extend.ParamSchema;
import dev.stepweave.core.extend.Plugin;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The card's recipe rung and parallelism contract, held by the engine before anything runs. */
class CardContractsAtTheEngineTest {
  /** A block cache that alters the distribution but reuses nothing across steps. */
  record Approximate() implements Plugin {
    @Override
    public String id() {
      return "approx";
    }

    @Override
    public InterceptionPoint point() {
      return InterceptionPoint.BLOCKS;
    }

    @Override
    public boolean distributionAltering() {
      return true;
    }

    @Override
    public boolean reusesAcrossSteps() {
      return false;
    }

    @Override
    public ParamSchema schema() {
      return ParamSchema.of();
    }
  }

  private static final Extensions DEPLOYED = Extensions.builder().enable(new Approximate()).build();

  /**
   * A card allowing the plugin, whose recipe's outputs hold only at {@code required} or stricter.
   */
  private static ModelCard card(ConsistencyRung required) {
    ModelCard c =
        ModelCardTestCards.card(
            new RecipeSpec("nft", List.of("wan-base"), "test", null, null, null, null, required));
    return new ModelCard(
        c.modelId(),
        c.family(),
        c.components(),
        c.loops(),
        c.capabilities(),
        c.recipe(),
        c.parity(),
        Map.of("approx", CacheContract.distributionAltering("approx", "residual")),
        c.parallelism(),
        c.precision(),
        c.checkpoint(),
        c.defaults());
  }

  private static Request request(boolean withPlugin, boolean overrideRecipe) {
    return Request.builder(
            TaskType.T2V,
            new DiffusionParams(
                2, 1, 0, 256, 256, 17, 8, "", Optional.of("euler"), Optional.empty()))
        .prompt("count")
        .plugins(withPlugin ? Map.of("approx", Map.of()) : Map.of())
        .overrideRecipe(overrideRecipe)
        .build();
  }

  @Test
  void aRunLooserThanTheRecipesRungIsRefusedAtSubmitNamingBoth() {
    try (Engine engine =
        new Engine(
            new CountingModel(card(ConsistencyRung.C1)), EngineConfig.defaults(), DEPLOYED)) {
      var e = assertThrows(RecipeRefusedException.class, () -> engine.submit(request(true, false)));
      assertEquals(
          "model 'tiny-4step' (recipe 'nft') refuses consistency rung C3 (recipe assumes C1);"
              + " override the recipe explicitly to run it anyway",
          e.getMessage());
    }
  }

  @Test
  void aRunAtOrAboveTheRungIsAcceptedAndAnOverrideIsRecorded() throws Exception {
    try (Engine engine =
        new Engine(
            new CountingModel(card(ConsistencyRung.C1)), EngineConfig.defaults(), DEPLOYED)) {
      engine.submit(request(false, false)).result().get(10, TimeUnit.SECONDS);
      var overridden = engine.submit(request(true, true)).result().get(10, TimeUnit.SECONDS);
      assertEquals(
          List.of("consistency rung C3 (recipe assumes C1)"), overridden.recipeOverrides());
    }
    try (Engine engine =
        new Engine(
            new CountingModel(card(ConsistencyRung.C3)), EngineConfig.defaults(), DEPLOYED)) {
      engine.submit(request(true, false)).result().get(10, TimeUnit.SECONDS);
    }
  }

  @Test
  void anInstanceWhosePlanTheCardDoesNotAllowIsRefusedAtConstruction() {
    WeightlessModel spread =
        new WeightlessModel("spread", ModelCardTestCards.card(RecipeSpec.base())) {
          @Override
          Map<String, CountingModel.Counting> loops() {
            return Map.of();
          }

          @Override
          public String parallelPlan() {
            return "sequence=2";
          }
        };
    var e = assertThrows(InvalidCardException.class, () -> new Engine(spread));
    assertEquals(CardProblem.Code.UNSUPPORTED_PARALLEL_PLAN, e.problems().getFirst().code());
    assertEquals(1, e.getMessage().lines().count());
  }

  @Test
  void aTaskTheCardDoesNotServeIsRefusedAtSubmitNamingTheCardsTasks() {
    try (Engine engine = new Engine(new CountingModel(card(ConsistencyRung.C1)))) {
      Request i2v =
          Request.builder(TaskType.I2V, request(false, false).params())
              .inputs(
                  List.of(
                      new dev.stepweave.core.request.ModalPart.Text("count"),
                      new dev.stepweave.core.request.ModalPart.Image(
                          1, 1, new byte[] {0, 0, 0}, "00")))
              .build();
      var e =
          assertThrows(
              dev.stepweave.core.request.InvalidRequestException.class, () -> engine.submit(i2v));
      assertEquals("model 'tiny-4step' does not serve task i2v (it serves t2v)", e.getMessage());
      assertEquals(Optional.of("task"), e.field());
    }
  }
}

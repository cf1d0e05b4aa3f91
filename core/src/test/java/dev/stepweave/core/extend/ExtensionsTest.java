package dev.stepweave.core.extend;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.CacheContract;
import dev.stepweave.core.card.ConsistencyRung;
import dev.stepweave.core.card.ModelCard;
import dev.stepweave.core.card.ModelCardTestCards;
import dev.stepweave.core.card.RecipeSpec;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.extend.ParamSchema.Param;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.InvalidRequestException;
import dev.stepweave.core.request.Request;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Plugins are enabled by the deployment; requests only parameterise them, and refusals come first.
 */
class ExtensionsTest {
  record TestPlugin(String id, InterceptionPoint point, boolean distributionAltering)
      implements Plugin {
    @Override
    public boolean reusesAcrossSteps() {
      return distributionAltering;
    }

    @Override
    public ParamSchema schema() {
      return ParamSchema.of(
          Param.number("threshold", 0, 1, 0.1, "reuse below this change"),
          Param.integer("warmup", 0, 100, 2, "steps computed first"));
    }
  }

  static final Plugin BLOCKS_A = new TestPlugin("blocks_a", Plugin.InterceptionPoint.BLOCKS, true);
  static final Plugin BLOCKS_B = new TestPlugin("blocks_b", Plugin.InterceptionPoint.BLOCKS, true);
  static final Plugin EXACT_OK = new TestPlugin("exact_ok", Plugin.InterceptionPoint.STEP, false);

  static ModelCard card(RecipeSpec recipe) {
    ModelCard c = ModelCardTestCards.card(recipe);
    return new ModelCard(
        c.modelId(),
        c.family(),
        c.components(),
        c.loops(),
        c.capabilities(),
        c.recipe(),
        c.parity(),
        Map.of(
            "blocks_a", CacheContract.distributionAltering("blocks_a", "residual"),
            "blocks_b", CacheContract.distributionAltering("blocks_b", "residual"),
            "exact_ok", CacheContract.exact("exact_ok", "step")),
        c.parallelism(),
        c.precision(),
        c.checkpoint(),
        c.defaults());
  }

  static Request request(Map<String, Map<String, String>> plugins) {
    return Request.builder(
            TaskType.T2V,
            new DiffusionParams(4, 1.0, 1, 64, 64, 5, 8, "", Optional.empty(), Optional.empty()))
        .prompt("a cat")
        .plugins(plugins)
        .build();
  }

  static final Extensions DEPLOYED =
      Extensions.builder().enable(BLOCKS_A).enable(BLOCKS_B).enable(EXACT_OK).build();

  @Test
  void aDistributionAlteringPluginLoosensTheRunToDistributionParity() {
    ModelCard card = card(RecipeSpec.base());
    assertEquals(ConsistencyRung.C1, Extensions.consistencyOf(List.of(), card));
    assertEquals(
        ConsistencyRung.C1,
        Extensions.consistencyOf(
            DEPLOYED.admit(request(Map.of("exact_ok", Map.of())), card), card));
    assertEquals(
        ConsistencyRung.C3,
        Extensions.consistencyOf(
            DEPLOYED.admit(request(Map.of("blocks_a", Map.of())), card), card));
  }

  @Test
  void parametersAreValidatedAndDefaulted() {
    List<ActivePlugin> active =
        DEPLOYED.admit(
            request(Map.of("blocks_a", Map.of("threshold", "0.2"))), card(RecipeSpec.base()));
    assertEquals(1, active.size());
    assertEquals(0.2, active.get(0).params().number("threshold"));
    assertEquals(2, active.get(0).params().integer("warmup"));
  }

  @Test
  void aDeploymentSetsItsOwnDefaultsWithinTheSchema() {
    Extensions tuned =
        Extensions.builder().enable(BLOCKS_A, Map.of("threshold", "0.3")).enable(EXACT_OK).build();
    var base = card(RecipeSpec.base());
    List<ActivePlugin> active = tuned.admit(request(Map.of("blocks_a", Map.of())), base);
    assertEquals(0.3, active.get(0).params().number("threshold"));
    assertEquals(2, active.get(0).params().integer("warmup")); // the plugin's own default
    // A request's own value still wins.
    assertEquals(
        0.5,
        tuned
            .admit(request(Map.of("blocks_a", Map.of("threshold", "0.5"))), base)
            .get(0)
            .params()
            .number("threshold"));
    assertEquals(List.of("blocks_a", "exact_ok"), List.copyOf(tuned.plugins().keySet()));
    assertEquals(0.1, tuned.schema("exact_ok").params().get(0).defaultValue());
    assertMessage(
        "blocks_a.threshold must be in 0.0..1.0, got 7",
        () -> Extensions.builder().enable(BLOCKS_A, Map.of("threshold", "7")));
    assertMessage(
        "unknown parameter 'blocks_a.fn' (known: threshold, warmup)",
        () -> Extensions.builder().enable(BLOCKS_A, Map.of("fn", "7")));
  }

  @Test
  void refusalsNameTheRequestFieldAtFault() {
    var base = card(RecipeSpec.base());
    assertField(
        "plugins.blocks_a.threshold",
        () -> DEPLOYED.admit(request(Map.of("blocks_a", Map.of("threshold", "5"))), base));
    assertField(
        "plugins.blocks_a.fn",
        () -> DEPLOYED.admit(request(Map.of("blocks_a", Map.of("fn", "1"))), base));
    assertField(
        "plugins", () -> Extensions.NONE.admit(request(Map.of("blocks_a", Map.of())), base));
    assertField(
        "plugins",
        () -> DEPLOYED.admit(request(Map.of("blocks_a", Map.of(), "blocks_b", Map.of())), base));
    assertField(
        "exact",
        () ->
            DEPLOYED.admit(
                request(Map.of("blocks_a", Map.of())).toBuilder().exact(true).build(), base));
  }

  @Test
  void badParametersAreOneLineErrors() {
    var base = card(RecipeSpec.base());
    assertMessage(
        "blocks_a.threshold must be in 0.0..1.0, got 5",
        () -> DEPLOYED.admit(request(Map.of("blocks_a", Map.of("threshold", "5"))), base));
    assertMessage(
        "blocks_a.warmup must be an integer, got 'two'",
        () -> DEPLOYED.admit(request(Map.of("blocks_a", Map.of("warmup", "two"))), base));
    assertMessage(
        "unknown parameter 'blocks_a.fn' (known: threshold, warmup)",
        () -> DEPLOYED.admit(request(Map.of("blocks_a", Map.of("fn", "1"))), base));
  }

  @Test
  void aRequestCannotTurnOnAPluginTheDeploymentDidNotEnable() {
    assertMessage(
        "plugin 'blocks_a' is not enabled on this deployment (enabled: none)",
        () ->
            Extensions.NONE.admit(request(Map.of("blocks_a", Map.of())), card(RecipeSpec.base())));
  }

  @Test
  void conflictingInterceptorsAreRejected() {
    assertMessage(
        "plugins 'blocks_a' and 'blocks_b' conflict: both intercept blocks",
        () ->
            DEPLOYED.admit(
                request(Map.of("blocks_a", Map.of(), "blocks_b", Map.of())),
                card(RecipeSpec.base())));
  }

  @Test
  void anExactRequestRefusesDistributionAlteringPlugins() {
    var exact = request(Map.of("blocks_a", Map.of())).toBuilder().exact(true).build();
    assertMessage(
        "an exact request refuses plugin 'blocks_a': it alters the output distribution",
        () -> DEPLOYED.admit(exact, card(RecipeSpec.base())));
    var fine = request(Map.of("exact_ok", Map.of())).toBuilder().exact(true).build();
    assertEquals(1, DEPLOYED.admit(fine, card(RecipeSpec.base())).size());
  }

  @Test
  void aFewStepDistilledCardRefusesStepReuse() {
    var e =
        assertThrows(
            InvalidRequestException.class,
            () ->
                DEPLOYED.admit(
                    request(Map.of("blocks_a", Map.of())), card(ModelCardTestCards.distilled())));
    assertTrue(
        e.getMessage().contains("(recipe 'dmd2', 4 steps) refuses plugin 'blocks_a'"),
        e.getMessage());
  }

  @Test
  void theCardMustAllowThePlugin() {
    Extensions other =
        Extensions.builder()
            .enable(new TestPlugin("teacache", Plugin.InterceptionPoint.STEP, true))
            .build();
    assertMessage(
        "model 'tiny-4step' does not allow plugin 'teacache'",
        () -> other.admit(request(Map.of("teacache", Map.of())), card(RecipeSpec.base())));
  }

  @Test
  void pluginStateRoundTripsAndReportsCounters() {
    PluginState s = new PluginState();
    s.slot("dbcache", "cond").put("count_skipped_blocks", 3);
    s.slot("dbcache", "uncond").put("count_skipped_blocks", 4);
    s.slot("dbcache", "cond").put("computed_step", 2);
    s.slot("dbcache", "cond").put("d0", dev.stepweave.tensor.Tensor.of(new float[] {1, 2}, 2));
    assertEquals(Map.of("dbcache.skipped_blocks", 7L), s.report());
    PluginState back = PluginState.restore(s.tensors(t -> t), s.numbers(), t -> t);
    assertEquals(s.numbers(), back.numbers());
    assertEquals(2.0f, back.slot("dbcache", "cond").tensor("d0").getFloat(1));
  }

  private static void assertField(String expected, Runnable r) {
    var e = assertThrows(InvalidRequestException.class, r::run);
    assertEquals(Optional.of(expected), e.field(), e.getMessage());
  }

  private static void assertMessage(String expected, Runnable r) {
    var e = assertThrows(InvalidRequestException.class, r::run);
    assertEquals(expected, e.getMessage());
  }
}

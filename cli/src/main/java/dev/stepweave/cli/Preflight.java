package dev.stepweave.cli;

import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.request.TaskChoice;
import dev.stepweave.models.wan.WanRequestRules;
import dev.stepweave.tensor.Precision;

/**
 * The engine's intake checks that need no weights, run before the model loads so that a bad setting
 * costs nothing: the request's own validation, the task against the card, the checkpoint's rules
 * (settings, sampler, size unit), the deployment's plugins and the card's recipe. The engine runs
 * them again (with the adapters' recipes and the memory budget) when the request is submitted.
 */
final class Preflight {
  private Preflight() {}

  /**
   * Refuses {@code request} as the engine would, but for its recipe ({@link #recipe}, which needs
   * the backend's precision).
   *
   * @throws dev.stepweave.core.request.InvalidRequestException naming the bad setting
   */
  static void request(Request request, WanRequestRules rules, Extensions deployment) {
    request.validate();
    TaskChoice.requireServed(rules.card(), request.task());
    rules.validate(request);
    deployment.admit(request, rules.card());
  }

  /**
   * Refuses settings the card's recipe does not allow, unless the request overrides it.
   *
   * @throws dev.stepweave.core.card.RecipeRefusedException naming the settings
   */
  static void recipe(
      Request request, WanRequestRules rules, Extensions deployment, Precision precision) {
    var card = rules.card();
    card.admitSettings(
        rules.samplerFor(request),
        request.params().steps(),
        request.params().guidance(),
        precision,
        Extensions.consistencyOf(deployment.admit(request, card), card),
        request.overrideRecipe());
  }
}

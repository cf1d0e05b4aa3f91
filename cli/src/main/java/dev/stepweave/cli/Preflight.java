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
   * Refuses {@code request} as the engine would.
   *
   * @throws dev.stepweave.core.request.InvalidRequestException naming the bad setting
   * @throws dev.stepweave.core.card.RecipeRefusedException when the card's recipe refuses it
   */
  static void check(
      Request request, WanRequestRules rules, Extensions deployment, Precision precision) {
    var card = rules.card();
    request.validate();
    TaskChoice.requireServed(card, request.task());
    rules.validate(request);
    var plugins = deployment.admit(request, card);
    card.admitSettings(
        rules.samplerFor(request),
        request.params().steps(),
        precision,
        Extensions.consistencyOf(plugins, card),
        request.overrideRecipe());
  }
}

package dev.stepweave.core.runtime;

import dev.stepweave.core.card.RecipeRefusedException;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.extend.ResolvedAdapter;
import dev.stepweave.core.loop.ModelInstance;
import dev.stepweave.core.loop.ResourceRequest;
import dev.stepweave.core.memory.Reservation;
import dev.stepweave.core.program.InlineProgram;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.request.TaskChoice;
import java.util.ArrayList;
import java.util.List;

/**
 * What a request must pass before it queues: its own validation, the model's, the deployment's
 * plugins, the card's recipe, a reservation that could fit this pool at all, and a price within the
 * {@link CostLimits} (or the jumbo class). Reservations are priced by the static cost model, a
 * request's price by {@link Pricing} (a forecast never licenses optimism). Thread-safe: it only
 * reads.
 */
final class Intake {
  private final Extensions extensions;
  private final CostModel cost;
  private final AdmissionController admission;
  private final Pricing pricing;
  private final CostLimits limits;

  Intake(Extensions extensions, CostModel cost, AdmissionController admission, CostLimits limits) {
    this.extensions = extensions;
    this.cost = cost;
    this.admission = admission;
    this.pricing = new Pricing(cost);
    this.limits = limits;
  }

  /**
   * The run of {@code request} on {@code m}, its events going to {@code handle}.
   *
   * @throws dev.stepweave.core.request.InvalidRequestException for a request no model can run
   * @throws dev.stepweave.core.card.RecipeRefusedException when the recipe refuses its settings
   * @throws AdmissionRejectedException when it could never fit this pool's budgets
   * @throws CostLimitExceededException when its price is over the cost limits and no jumbo class
   *     takes it
   */
  ProgramRun accept(
      ModelInstance m,
      Request request,
      RequestHandle handle,
      ProgramCheckpoint from,
      RequestOptions options) {
    request.validate();
    // Before the model's own checks, which assume a task it serves.
    TaskChoice.requireServed(m.card(), request.task());
    m.validate(request);
    var plugins = extensions.admit(request, m.card());
    List<ResolvedAdapter> adapters = extensions.adapters().resolve(request);
    InlineProgram program = InlineProgram.forTask(m.card(), request.task());
    List<String> overrides = new ArrayList<>();
    m.card()
        .admitSettings(
            m.samplerFor(request),
            request.params().steps(),
            request.params().guidance(),
            m.precision(),
            Extensions.consistencyOf(plugins, m.card()),
            request.overrideRecipe())
        .forEach(o -> overrides.add(o.toString()));
    overrides.addAll(adapterRecipeOverrides(m, request, adapters));
    ResourceRequest footprint = m.footprint(request);
    Reservation reservation =
        new Reservation(
            request.id(),
            footprint.memoryBytes(),
            cost.staticMillis(footprint),
            footprint.cacheBlocks());
    String never = admission.neverFits(reservation);
    if (never != null) {
      throw new AdmissionRejectedException(
          "request " + request.id() + " can never run on this pool: it " + never);
    }
    RequestPrice price = pricing.price(m, request, footprint);
    CostClass costClass = CostClass.LATENCY;
    if (limits.exceededBy(price)) {
      if (!limits.jumboClass()) {
        throw new CostLimitExceededException(request.id(), price, limits);
      }
      costClass = CostClass.JUMBO;
    }
    handle.priced(price, costClass);
    return new ProgramRun(
        request, handle, program, overrides, options, reservation, from, extensions, adapters);
  }

  /**
   * The settings the request runs against its adapters' recipes, each as "adapter NAME: …".
   *
   * @throws RecipeRefusedException naming the adapter and both settings, unless the request
   *     overrides
   */
  private static List<String> adapterRecipeOverrides(
      ModelInstance m, Request request, List<ResolvedAdapter> adapters) {
    List<String> out = new ArrayList<>();
    for (ResolvedAdapter a : adapters) {
      var recipe = a.adapter().info().recipe();
      if (recipe.isEmpty()) {
        continue;
      }
      var mismatches =
          recipe
              .get()
              .mismatches(
                  m.samplerFor(request),
                  request.params().steps(),
                  request.params().guidance(),
                  m.shiftFor(request));
      if (!mismatches.isEmpty() && !request.overrideRecipe()) {
        throw RecipeRefusedException.forAdapter(a.name(), recipe.get().method(), mismatches);
      }
      mismatches.forEach(x -> out.add("adapter " + a.name() + ": " + x));
    }
    return out;
  }
}

package dev.stepweave.core.runtime;

import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.loop.ModelInstance;
import dev.stepweave.core.loop.ResourceRequest;
import dev.stepweave.core.memory.Reservation;
import dev.stepweave.core.program.InlineProgram;
import dev.stepweave.core.request.Request;
import java.util.List;

/**
 * What a request must pass before it queues: its own validation, the model's, the deployment's
 * plugins, the card's recipe, and a reservation that could fit this pool at all. Priced by the
 * static cost model (a forecast never licenses optimism). Thread-safe: it only reads.
 */
final class Intake {
  private final Extensions extensions;
  private final CostModel cost;
  private final AdmissionController admission;

  Intake(Extensions extensions, CostModel cost, AdmissionController admission) {
    this.extensions = extensions;
    this.cost = cost;
    this.admission = admission;
  }

  /**
   * The run of {@code request} on {@code m}, its events going to {@code handle}.
   *
   * @throws dev.stepweave.core.request.InvalidRequestException for a request no model can run
   * @throws dev.stepweave.core.card.RecipeRefusedException when the recipe refuses its settings
   * @throws AdmissionRejectedException when it could never fit this pool's budgets
   */
  ProgramRun accept(
      ModelInstance m,
      Request request,
      RequestHandle handle,
      ProgramCheckpoint from,
      RequestOptions options) {
    request.validate();
    m.validate(request);
    var plugins = extensions.admit(request, m.card());
    InlineProgram program = InlineProgram.forTask(m.card(), request.task());
    List<String> overrides =
        m
            .card()
            .admitSettings(
                m.samplerFor(request),
                request.params().steps(),
                m.precision(),
                Extensions.consistencyOf(plugins, m.card()),
                request.overrideRecipe())
            .stream()
            .map(Object::toString)
            .toList();
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
    return new ProgramRun(
        request, handle, program, overrides, options, reservation, from, extensions);
  }
}

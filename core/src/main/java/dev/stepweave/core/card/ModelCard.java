package dev.stepweave.core.card;

import static dev.stepweave.core.card.CardProblem.Code.*;

import dev.stepweave.tensor.Precision;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * A model as a typed contract: its components, the loops it can run, the tasks it serves, the
 * recipe that made its weights, its parity obligation, and the contracts the runtime must honour. A
 * card is validated ({@link #validate}) before any weights load; it is stored as {@code card.json}
 * beside a checkpoint ({@link CardJson}).
 */
public record ModelCard(
    String modelId,
    String family,
    Map<String, ComponentSpec> components,
    Map<String, LoopSpec> loops,
    Map<TaskType, List<String>> capabilities,
    RecipeSpec recipe,
    ParitySpec parity,
    Map<String, CacheContract> caches,
    ParallelismContract parallelism,
    PrecisionContract precision,
    CheckpointManifest checkpoint,
    GenerationDefaults defaults) {

  public ModelCard {
    components = Map.copyOf(Objects.requireNonNullElse(components, Map.of()));
    loops = Map.copyOf(Objects.requireNonNullElse(loops, Map.of()));
    capabilities = Map.copyOf(Objects.requireNonNullElse(capabilities, Map.of()));
    caches = Map.copyOf(Objects.requireNonNullElse(caches, Map.of()));
  }

  /** The tasks this card serves. */
  public Set<TaskType> tasks() {
    return capabilities.keySet();
  }

  /** The tasks this card serves as users name them, sorted: "t2i, t2v". */
  public String taskNames() {
    return String.join(", ", tasks().stream().map(TaskType::wireName).sorted().toList());
  }

  /** The loop ids a task runs, in order. */
  public List<String> loopsFor(TaskType task) {
    List<String> ids = capabilities.get(task);
    if (ids == null) {
      throw new IllegalArgumentException(
          "model '"
              + modelId
              + "' cannot run task "
              + task.wireName()
              + " (it serves "
              + taskNames()
              + ")");
    }
    return ids;
  }

  /**
   * Checks that the card is internally consistent.
   *
   * @throws InvalidCardException listing every problem found
   */
  public ModelCard validate(String where) {
    List<CardProblem> problems = problems();
    if (!problems.isEmpty()) {
      throw new InvalidCardException(where, problems);
    }
    return this;
  }

  /** Every internal inconsistency, empty when the card is valid. */
  public List<CardProblem> problems() {
    List<CardProblem> p = new ArrayList<>();
    if (modelId == null || modelId.isBlank()) {
      p.add(new CardProblem(MISSING_FIELD, "card has no modelId"));
    }
    if (family == null || family.isBlank()) {
      p.add(new CardProblem(MISSING_FIELD, "card has no family"));
    }
    if (recipe == null) {
      p.add(new CardProblem(MISSING_FIELD, "card has no recipe"));
    }
    if (parity == null) {
      p.add(new CardProblem(MISSING_FIELD, "card has no parity spec"));
    }
    if (precision == null) {
      p.add(new CardProblem(MISSING_FIELD, "card has no precision contract"));
    }
    if (parallelism == null) {
      p.add(new CardProblem(MISSING_FIELD, "card has no parallelism contract"));
    }
    if (checkpoint == null) {
      p.add(new CardProblem(MISSING_FIELD, "card has no checkpoint manifest"));
    }
    if (defaults == null) {
      p.add(new CardProblem(MISSING_FIELD, "card has no generation defaults"));
    }
    if (components.isEmpty()) {
      p.add(new CardProblem(MISSING_FIELD, "card has no components"));
    }
    components.forEach(
        (id, c) -> {
          if (!id.equals(c.id())) {
            p.add(
                new CardProblem(
                    UNKNOWN_COMPONENT,
                    "component key '" + id + "' holds component '" + c.id() + "'"));
          }
          if (precision != null && !precision.supported().contains(c.precision())) {
            p.add(
                new CardProblem(
                    UNSUPPORTED_PRECISION,
                    "component '"
                        + id
                        + "' runs in "
                        + c.precision().wireName()
                        + ", which the precision contract does not support"));
          }
        });
    loops.forEach(
        (id, loop) -> {
          for (String c : loop.components()) {
            if (!components.containsKey(c)) {
              p.add(
                  new CardProblem(
                      UNKNOWN_COMPONENT, "loop '" + id + "' uses unknown component '" + c + "'"));
            }
          }
        });
    capabilities.forEach(
        (task, loopIds) -> {
          if (loopIds.isEmpty()) {
            p.add(new CardProblem(NO_LOOP_FOR_TASK, "task " + task.wireName() + " runs no loop"));
          }
          for (String l : loopIds) {
            if (!loops.containsKey(l)) {
              p.add(
                  new CardProblem(
                      UNKNOWN_LOOP, "task " + task.wireName() + " runs unknown loop '" + l + "'"));
            }
          }
        });
    if (checkpoint != null) {
      checkpoint
          .components()
          .keySet()
          .forEach(
              c -> {
                if (!components.containsKey(c)) {
                  p.add(
                      new CardProblem(
                          UNKNOWN_COMPONENT,
                          "checkpoint manifest names unknown component '" + c + "'"));
                }
              });
      for (TaskType task : capabilities.keySet()) {
        for (String loopId : capabilities.get(task)) {
          LoopSpec loop = loops.get(loopId);
          if (loop == null) {
            continue;
          }
          for (String c : loop.components()) {
            var req = checkpoint.components().get(c);
            if (req == null || !req.requiredFor().contains(task)) {
              p.add(
                  new CardProblem(
                      MISSING_REQUIRED_COMPONENT,
                      "component '"
                          + c
                          + "' is used by task "
                          + task.wireName()
                          + " but the manifest does not require it for that task"));
            }
          }
        }
      }
    }
    if (recipe != null
        && recipe.assumesLoop() != null
        && !loops.containsKey(recipe.assumesLoop())) {
      p.add(
          new CardProblem(
              UNKNOWN_LOOP, "recipe assumes unknown loop '" + recipe.assumesLoop() + "'"));
    }
    if (recipe != null
        && precision != null
        && recipe.assumesPrecision() != null
        && !precision.supported().contains(recipe.assumesPrecision())) {
      p.add(
          new CardProblem(
              UNSUPPORTED_PRECISION,
              "recipe assumes precision "
                  + recipe.assumesPrecision().wireName()
                  + ", which the precision contract does not support"));
    }
    if (recipe != null
        && parity != null
        && !parity.rung().satisfies(recipe.consistencyRequired())) {
      p.add(
          new CardProblem(
              RUNG_BELOW_RECIPE,
              "parity spec holds the card to "
                  + parity.rung()
                  + ", looser than its recipe requires ("
                  + recipe.consistencyRequired()
                  + ")"));
    }
    if (precision != null && !precision.supported().contains(precision.defaultPrecision())) {
      p.add(
          new CardProblem(
              UNSUPPORTED_PRECISION,
              "default precision "
                  + precision.defaultPrecision().wireName()
                  + " is not among the supported ones"));
    }
    return p;
  }

  /**
   * The recipe's teeth: refuses settings the recipe does not allow, and a run held to a looser
   * consistency rung than the recipe requires, unless the request overrides; returns the mismatches
   * an override accepted (to record on the artifact).
   *
   * @param runsAt the rung the run would be held to (looser once a plugin alters the distribution)
   * @throws RecipeRefusedException naming the card's assumptions and the request's settings
   */
  public List<RecipeSpec.RecipeMismatch> admitSettings(
      String sampler,
      int steps,
      double guidance,
      Precision runPrecision,
      ConsistencyRung runsAt,
      boolean overrideRecipe) {
    List<RecipeSpec.RecipeMismatch> mismatches =
        recipe.mismatches(sampler, steps, guidance, runPrecision, runsAt);
    if (!mismatches.isEmpty() && !overrideRecipe) {
      throw new RecipeRefusedException(modelId, recipe.method(), mismatches);
    }
    return mismatches;
  }
}

package dev.stepweave.core.runtime;

import dev.stepweave.core.card.ModelCard;
import dev.stepweave.tensor.Precision;

/**
 * What a fleet router reads of one engine (design §14): the model card it serves and how, the cost
 * model with its calibration, its limits and budgets, and its load now. A product adds what it
 * knows of its own limits and health (the server's {@code GET /v1/deployment}).
 *
 * @param schemaVersion {@link #SCHEMA_VERSION}: bumps when a field changes meaning or goes away
 * @param card the served model card (components, loops, tasks, recipe, caches, precisions)
 * @param instanceId the instance serving now (a new one after a pool-fatal fault)
 * @param precision the precision it computes in
 * @param backend the backend's name ("cpu", "cuda:0")
 * @param costModel the cost model's figures and calibrations
 * @param costLimits what one request may cost, and whether a jumbo class takes the rest
 * @param budgets the pool's admission budgets
 * @param load what the engine is doing now
 */
public record DeploymentCard(
    int schemaVersion,
    ModelCard card,
    String instanceId,
    Precision precision,
    String backend,
    CostModel.Snapshot costModel,
    CostLimits costLimits,
    Budgets budgets,
    Load load) {
  public static final int SCHEMA_VERSION = 1;

  /**
   * @param maxRunning requests admitted at once
   * @param maxBatchSize work units in one call
   * @param memoryBudgetBytes device memory requests may reserve ({@link Long#MAX_VALUE}: unlimited)
   */
  public record Budgets(int maxRunning, int maxBatchSize, long memoryBudgetBytes) {}

  /**
   * @param queued requests waiting (both classes)
   * @param running requests admitted and not finished
   * @param accepting whether new requests are admitted (false while draining or rebuilding)
   * @param poolFaults pool-fatal faults recovered from since start
   * @param admitted requests admitted since start
   * @param completed requests completed since start
   * @param failed requests failed since start
   */
  public record Load(
      int queued,
      int running,
      boolean accepting,
      long poolFaults,
      long admitted,
      long completed,
      long failed) {}
}

package dev.stepweave.core.runtime;

import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.loop.BatchableCall;
import dev.stepweave.core.loop.ShapeSignature;
import dev.stepweave.core.loop.WorkPlan;
import dev.stepweave.tensor.Precision;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Groups one tick's work plans into calls: plans share a call only when they run on the same
 * instance, are of the same kind, shape signature, precision, parallel plan and weights version,
 * need the same swapped component awake, and their calls are {@link BatchableCall}s with equal
 * batch keys. A batch holds at most {@code maxBatchSize} units and, by the cost model's prediction,
 * at most {@code maxBatchMillis} (a unit that alone predicts more still runs, alone). Batches keep
 * the plans' order.
 */
final class BatchScheduler {
  /** Everything that must be equal for plans to share a call. */
  record GroupKey(
      String instanceId,
      WorkKind kind,
      ShapeSignature shape,
      Precision precision,
      String parallelPlan,
      long weightsVersion,
      java.util.Optional<String> awakeComponent,
      Object batchKey) {}

  /** The pool facts a plan does not carry itself. */
  record Pool(String modelId, Precision precision, String parallelPlan, long weightsVersion) {}

  /**
   * One call to run.
   *
   * @param members indices into the plans given to {@link #group}
   * @param predictedMillis the cost model's prediction for the whole batch
   */
  record Batch(GroupKey key, List<Integer> members, double predictedMillis) {
    Batch {
      members = List.copyOf(members);
    }
  }

  private final int maxBatchSize;
  private final double maxBatchMillis;
  private final CostModel cost;

  BatchScheduler(int maxBatchSize, double maxBatchMillis, CostModel cost) {
    this.maxBatchSize = maxBatchSize;
    this.maxBatchMillis = maxBatchMillis;
    this.cost = cost;
  }

  List<Batch> group(List<WorkPlan> plans, Pool pool) {
    List<Batch> closed = new ArrayList<>();
    Map<GroupKey, List<Integer>> open = new LinkedHashMap<>();
    for (int i = 0; i < plans.size(); i++) {
      WorkPlan plan = plans.get(i);
      Object batchKey = plan.call() instanceof BatchableCall b ? b.batchKey() : null;
      GroupKey key =
          new GroupKey(
              plan.instanceId(),
              plan.kind(),
              plan.shape(),
              pool.precision(),
              pool.parallelPlan(),
              pool.weightsVersion(),
              plan.call().awakeComponent(),
              batchKey);
      if (batchKey == null) {
        closed.add(batch(key, List.of(i), plans, pool));
        continue;
      }
      List<Integer> members = open.computeIfAbsent(key, k -> new ArrayList<>());
      if (!members.isEmpty()
          && (members.size() == maxBatchSize
              || predict(key, members.size() + 1, plans.get(members.get(0)), pool)
                  > maxBatchMillis)) {
        closed.add(batch(key, members, plans, pool));
        members.clear();
      }
      members.add(i);
    }
    open.forEach(
        (key, members) -> {
          if (!members.isEmpty()) {
            closed.add(batch(key, members, plans, pool));
          }
        });
    closed.sort(java.util.Comparator.comparingInt(b -> b.members().get(0)));
    return closed;
  }

  CostModel.Key costKey(GroupKey key, int size, Pool pool) {
    return new CostModel.Key(pool.modelId(), key.kind(), key.shape(), key.precision(), size);
  }

  private double predict(GroupKey key, int size, WorkPlan unit, Pool pool) {
    return cost.predict(costKey(key, size, pool), unit.resources());
  }

  private Batch batch(GroupKey key, List<Integer> members, List<WorkPlan> plans, Pool pool) {
    return new Batch(key, members, predict(key, members.size(), plans.get(members.get(0)), pool));
  }
}

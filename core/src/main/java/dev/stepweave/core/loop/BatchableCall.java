package dev.stepweave.core.loop;

import java.util.List;

/**
 * A work call that can share one device call with compatible calls of other requests. The scheduler
 * groups plans by instance, kind, shape signature, precision and weights version, and within a
 * group by {@link #batchKey}; it then runs the group through any member's {@link #runBatch}.
 *
 * <p>A batchable call must be pure: it reads its inputs and returns its result without changing any
 * request's state, so the scheduler may re-run a member alone to find which request a failed batch
 * belongs to.
 */
public interface BatchableCall extends WorkCall {

  /** Calls with equal keys can run in one {@link #runBatch}; it names the batch runner. */
  Object batchKey();

  /**
   * Runs {@code calls} (all with this call's batch key, this call among them) as one batched call.
   *
   * @return one result per call, in the order of {@code calls}, each equal to what that call's
   *     {@link #run} returns alone
   */
  List<StepResult> runBatch(List<BatchableCall> calls);
}

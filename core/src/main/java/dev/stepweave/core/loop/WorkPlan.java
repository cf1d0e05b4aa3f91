package dev.stepweave.core.loop;

import dev.stepweave.core.card.WorkKind;
import java.util.Objects;

/**
 * One step a loop wants run: a description the scheduler can reason about (kind, shape, resources,
 * cancel scope) and the call that computes it.
 *
 * @param loopId the loop that planned it
 * @param instanceId the model instance it runs on
 * @param kind the kind of work unit
 * @param shape batch-compatibility and graph-capture key
 * @param resources what must be reserved before it runs
 * @param cancelScope the scope whose cancellation drops it
 * @param stepIndex the loop step this plan computes (0-based)
 * @param call the computation
 */
public record WorkPlan(
    String loopId,
    String instanceId,
    WorkKind kind,
    ShapeSignature shape,
    ResourceRequest resources,
    CancelScope cancelScope,
    int stepIndex,
    WorkCall call)
    implements Step {
  public WorkPlan {
    Objects.requireNonNull(loopId, "loopId");
    Objects.requireNonNull(instanceId, "instanceId");
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(shape, "shape");
    Objects.requireNonNull(resources, "resources");
    Objects.requireNonNull(cancelScope, "cancelScope");
    Objects.requireNonNull(call, "call");
  }
}

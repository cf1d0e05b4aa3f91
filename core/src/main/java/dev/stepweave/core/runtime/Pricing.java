package dev.stepweave.core.runtime;

import dev.stepweave.core.loop.ModelInstance;
import dev.stepweave.core.loop.ResourceRequest;
import dev.stepweave.core.loop.WorkEstimate;
import dev.stepweave.core.request.Request;

/**
 * Prices a whole request from the cost model before it queues: each loop's steps × one step's
 * prediction at the request's shape, and the largest single step. A step's prediction is its static
 * estimate, raised — never lowered — by how much slower than static the calls of its kind measured
 * so far (a forecast never licenses optimism). Thread-safe: it only reads.
 */
final class Pricing {
  private final CostModel cost;

  Pricing(CostModel cost) {
    this.cost = cost;
  }

  /**
   * @param footprint the request's footprint, priced as one step when the model gives no {@link
   *     WorkEstimate}
   */
  RequestPrice price(ModelInstance m, Request request, ResourceRequest footprint) {
    WorkEstimate estimate = m.workEstimate(request);
    if (estimate.phases().isEmpty()) {
      double seconds = cost.staticMillis(footprint) / 1e3;
      return new RequestPrice(seconds, seconds, "request", false);
    }
    double total = 0;
    double largest = 0;
    String largestLoop = estimate.phases().getFirst().loopId();
    boolean calibrated = false;
    for (WorkEstimate.Phase p : estimate.phases()) {
      double factor =
          cost.calibration(m.card().modelId(), p.kind(), m.precision())
              .map(CostModel.Calibration::factor)
              .orElse(1.0);
      calibrated |= factor > 1 && p.steps() > 0;
      double step = cost.staticMillis(p.perStep()) * Math.max(1, factor) / 1e3;
      total += step * p.steps();
      if (p.steps() > 0 && step > largest) {
        largest = step;
        largestLoop = p.loopId();
      }
    }
    return new RequestPrice(total, largest, largestLoop, calibrated);
  }
}

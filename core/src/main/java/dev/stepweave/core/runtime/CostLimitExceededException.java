package dev.stepweave.core.runtime;

/**
 * A request whose predicted cost is over the pool's {@link CostLimits} where no jumbo class takes
 * it; the message names the predicted figures and the limits.
 */
public final class CostLimitExceededException extends RuntimeException {
  private final RequestPrice price;
  private final CostLimits limits;

  CostLimitExceededException(String requestId, RequestPrice price, CostLimits limits) {
    super(
        "request "
            + requestId
            + " is predicted to cost more than this deployment allows: "
            + price.describe()
            + "; the limits are "
            + RequestPrice.seconds(limits.maxStepSeconds())
            + " a step and "
            + RequestPrice.seconds(limits.maxRequestSeconds())
            + " a request");
    this.price = price;
    this.limits = limits;
  }

  public RequestPrice price() {
    return price;
  }

  public CostLimits limits() {
    return limits;
  }
}

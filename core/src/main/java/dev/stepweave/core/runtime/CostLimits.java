package dev.stepweave.core.runtime;

import dev.stepweave.tensor.Device;

/**
 * What one request may cost a pool, in predicted device seconds: its largest single step (a step is
 * indivisible, so it stalls every other request for its length) and the whole request. A request
 * over either is refused at submit ({@link CostLimitExceededException}), or, with {@code
 * jumboClass}, runs in the jumbo {@link CostClass}, which never shares a tick with latency-class
 * work.
 *
 * @param maxStepSeconds the largest predicted step admitted in the latency class
 * @param maxRequestSeconds the largest predicted request admitted in the latency class
 * @param jumboClass whether requests over a limit run in the jumbo class instead of being refused
 */
public record CostLimits(double maxStepSeconds, double maxRequestSeconds, boolean jumboClass) {
  /** Every request runs in the latency class, whatever it costs (the engine's default). */
  public static final CostLimits UNLIMITED =
      new CostLimits(Double.POSITIVE_INFINITY, Double.POSITIVE_INFINITY, false);

  public CostLimits {
    if (!(maxStepSeconds > 0) || !(maxRequestSeconds > 0)) {
      throw new IllegalArgumentException(
          "cost limits must be positive seconds, got "
              + maxStepSeconds
              + " per step and "
              + maxRequestSeconds
              + " per request");
    }
  }

  /**
   * A deployment's defaults on {@code kind}: on the CPU a step predicted at a minute or more is
   * refused (the pool would stop for that minute) and a request of an hour; a GPU pool serves
   * interactive traffic, so there 30 s a step and 30 min a request.
   */
  public static CostLimits defaultsFor(Device.Kind kind) {
    return kind == Device.Kind.CPU
        ? new CostLimits(60, 3600, false)
        : new CostLimits(30, 1800, false);
  }

  public CostLimits withMaxStepSeconds(double seconds) {
    return new CostLimits(seconds, maxRequestSeconds, jumboClass);
  }

  public CostLimits withMaxRequestSeconds(double seconds) {
    return new CostLimits(maxStepSeconds, seconds, jumboClass);
  }

  public CostLimits withJumboClass(boolean on) {
    return new CostLimits(maxStepSeconds, maxRequestSeconds, on);
  }

  /** Whether {@code price} is over a limit. */
  boolean exceededBy(RequestPrice price) {
    return price.largestStepSeconds() > maxStepSeconds
        || price.requestSeconds() > maxRequestSeconds;
  }
}

package dev.stepweave.core.runtime;

import java.time.Instant;

/**
 * How the engine treats one request besides what it computes.
 *
 * @param priority higher is admitted first (and, with preemption, may displace lower)
 * @param deadline when the request must have finished, or null for none; past it the request stops
 *     at the next step boundary and fails with {@link DeadlineExceededException}
 * @param sink receives where the run stands after every step, or null
 */
public record RequestOptions(int priority, Instant deadline, CheckpointSink sink) {
  public static final RequestOptions DEFAULT = new RequestOptions(0, null, null);

  public RequestOptions withPriority(int p) {
    return new RequestOptions(p, deadline, sink);
  }

  public RequestOptions withDeadline(Instant d) {
    return new RequestOptions(priority, d, sink);
  }

  public RequestOptions withSink(CheckpointSink s) {
    return new RequestOptions(priority, deadline, s);
  }
}

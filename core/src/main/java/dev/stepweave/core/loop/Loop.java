package dev.stepweave.core.loop;

import dev.stepweave.core.card.ModelInstance;
import dev.stepweave.core.request.Request;

/**
 * A model's loop: a serialisable state machine the runtime drives. The model owns the math ({@code
 * init / next / advance / finalize}); the runtime owns iteration ({@link LoopDriver}). {@code next}
 * describes work and launches nothing; {@code advance} folds a result in and may branch on it.
 */
public interface Loop<S extends LoopState> {

  /** The loop id in the card ("denoise"). */
  String id();

  S init(Request request, ModelInstance model, LoopContext ctx);

  Step next(S state);

  S advance(S state, StepResult result);

  LoopResult finalize(S state);

  /** Turns a state into data and back, bit-exactly. */
  SerializedState serialize(S state);

  S deserialize(SerializedState data, Request request, ModelInstance model);
}

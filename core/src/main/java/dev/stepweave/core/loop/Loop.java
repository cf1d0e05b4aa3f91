package dev.stepweave.core.loop;

import dev.stepweave.core.request.Request;
import dev.stepweave.core.request.RequestEvent;
import java.util.List;

/**
 * A model's loop: a serialisable state machine the runtime drives. The model owns the math ({@code
 * init / next / advance / finalize}); the runtime owns iteration ({@link LoopStepper}). {@code
 * next} describes work and launches nothing; {@code advance} folds a result in and may branch on
 * it.
 */
public interface Loop<S extends LoopState> {

  /** The loop id in the card ("denoise"). */
  String id();

  S init(Request request, ModelInstance model, LoopContext ctx);

  Step next(S state);

  S advance(S state, StepResult result);

  LoopResult finalize(S state);

  /**
   * Turns a state into data and back, bit-exactly. The tensors are the state's own, wherever they
   * live (no copies: the runtime copies to the host only what changed since its last capture, and
   * only when it checkpoints); they must not be written in place afterwards.
   */
  SerializedState serialize(S state);

  /**
   * Rebuilds a state serialised by {@link #serialize}, for the same request, in this or another
   * process.
   */
  S deserialize(SerializedState data, Request request, ModelInstance model, LoopContext ctx);

  /**
   * Events the loop publishes after a step has been folded in (e.g. {@code media.preview}); the
   * driver emits them. Most loops emit none.
   */
  default List<RequestEvent> eventsAfter(S state) {
    return List.of();
  }

  /**
   * What a failed request keeps of this loop's work (e.g. its last latents); the runtime hands them
   * out before reporting the failure. Most loops keep none.
   */
  default List<dev.stepweave.core.request.Artifact> partialArtifacts(S state) {
    return List.of();
  }
}

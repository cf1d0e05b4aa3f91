package dev.stepweave.core.runtime;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.Request;

/**
 * What request-level batching groups requests by ({@link
 * EngineConfig.Admission#SHAPE_GROUPS_WHEN_IDLE}): the settings that decide the shape of a
 * request's denoising steps — task, frame size, frame count, and whether guidance runs a second
 * branch — read from the request before any loop has planned a step. Step counts may differ within
 * a group (each batch row carries its own timestep); a member that finishes early leaves, and its
 * place stays empty until the group is done.
 */
public record RequestShape(TaskType task, int width, int height, int frames, boolean guided) {

  public static RequestShape of(Request r) {
    var p = r.params();
    // Guidance at or below 1 runs the conditional branch only (DiffusionParams).
    return new RequestShape(r.task(), p.width(), p.height(), p.frames(), p.guidance() > 1);
  }
}

package dev.stepweave.core.program;

import dev.stepweave.core.card.ModelCard;
import dev.stepweave.core.card.TaskType;
import java.util.List;

/**
 * Several loops of one card run in order on one resident model instance, each handing its result to
 * the next (text encoding → denoising → VAE decoding for Wan T2V).
 *
 * @param task the task this program serves
 * @param loopIds the loops, in run order
 */
public record InlineProgram(TaskType task, List<String> loopIds) {
  public InlineProgram {
    loopIds = List.copyOf(loopIds);
    if (loopIds.isEmpty()) {
      throw new IllegalArgumentException("a program runs at least one loop");
    }
  }

  /** The program the card declares for a task. */
  public static InlineProgram forTask(ModelCard card, TaskType task) {
    return new InlineProgram(task, card.loopsFor(task));
  }
}

package dev.stepweave.core.request;

import dev.stepweave.core.card.ModelCard;
import dev.stepweave.core.card.TaskType;

/**
 * The task a product declares for what its user gave, against the card it serves: a request
 * declares its task (never inferred by the engine), and the products (the CLI, the server) decide
 * it the same way here, so the same inputs mean the same task everywhere.
 */
public final class TaskChoice {
  private TaskChoice() {}

  /**
   * The task of a video request: with an image, i2v when the card serves it, else ti2v; without,
   * t2v when served, else ti2v (its text-only mode). Whatever is left the engine refuses naming the
   * card's tasks.
   *
   * @param imageInput how the user gives the image ("--image", "input_reference"), for messages
   * @throws InvalidRequestException ({@link Request#IMAGE}) for an image to a card that takes none,
   *     or no image to a card that needs one
   */
  public static TaskType forVideo(ModelCard card, boolean hasImage, String imageInput) {
    var tasks = card.tasks();
    if (hasImage) {
      if (tasks.contains(TaskType.I2V)) {
        return TaskType.I2V;
      }
      if (tasks.contains(TaskType.TI2V)) {
        return TaskType.TI2V;
      }
      throw new InvalidRequestException(
          Request.IMAGE,
          "model '"
              + card.modelId()
              + "' takes no input image (it serves "
              + card.taskNames()
              + "); "
              + imageInput
              + " needs an image-to-video model");
    }
    if (tasks.contains(TaskType.T2V)) {
      return TaskType.T2V;
    }
    if (tasks.contains(TaskType.TI2V)) {
      return TaskType.TI2V;
    }
    if (tasks.contains(TaskType.I2V)) {
      throw new InvalidRequestException(
          Request.IMAGE,
          "model '"
              + card.modelId()
              + "' needs an input image, its first frame (it serves "
              + card.taskNames()
              + "): give "
              + imageInput);
    }
    return TaskType.T2V;
  }

  /**
   * Refuses a task the card does not serve, before any check that assumes one it serves.
   *
   * @throws InvalidRequestException ({@code task}) naming the card's tasks
   */
  public static void requireServed(ModelCard card, TaskType task) {
    if (!card.tasks().contains(task)) {
      throw new InvalidRequestException(
          "task",
          "model '"
              + card.modelId()
              + "' does not serve task "
              + task.wireName()
              + " (it serves "
              + card.taskNames()
              + ")");
    }
  }
}

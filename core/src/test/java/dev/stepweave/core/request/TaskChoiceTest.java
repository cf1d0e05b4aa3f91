package dev.stepweave.core.request;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.stepweave.core.card.ModelCard;
import dev.stepweave.core.card.ModelCardTestCards;
import dev.stepweave.core.card.RecipeSpec;
import dev.stepweave.core.card.TaskType;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The task the products declare for an image or none, against what the card serves. */
class TaskChoiceTest {

  /** The fixture card serving exactly {@code tasks}, each with the card's one program. */
  private static ModelCard serving(TaskType... tasks) {
    ModelCard c = ModelCardTestCards.card(RecipeSpec.base());
    List<String> program = c.loopsFor(TaskType.T2V);
    Map<TaskType, List<String>> capabilities =
        Set.of(tasks).stream().collect(Collectors.toMap(t -> t, t -> program));
    return new ModelCard(
        c.modelId(),
        c.family(),
        c.components(),
        c.loops(),
        capabilities,
        c.recipe(),
        c.parity(),
        c.caches(),
        c.parallelism(),
        c.precision(),
        c.checkpoint(),
        c.defaults());
  }

  private static TaskType choose(ModelCard card, boolean image, int frames) {
    return TaskChoice.forInputs(card, image, frames, "--image");
  }

  @Test
  void anImageMeansI2vWhereServedElseTi2v() {
    assertEquals(TaskType.I2V, choose(serving(TaskType.I2V), true, 81));
    assertEquals(TaskType.I2V, choose(serving(TaskType.I2V, TaskType.T2V), true, 81));
    assertEquals(TaskType.TI2V, choose(serving(TaskType.TI2V), true, 81));
  }

  @Test
  void noImageMeansTextTasksWhereServedElseTi2vsTextMode() {
    assertEquals(TaskType.T2V, choose(serving(TaskType.T2V, TaskType.T2I), false, 81));
    assertEquals(TaskType.T2I, choose(serving(TaskType.T2V, TaskType.T2I), false, 1));
    assertEquals(TaskType.T2V, choose(serving(TaskType.T2V, TaskType.I2V), false, 81));
    assertEquals(TaskType.TI2V, choose(serving(TaskType.TI2V), false, 81));
  }

  @Test
  void anImageToATextOnlyCardIsRefusedNamingItsTasks() {
    var e =
        assertThrows(
            InvalidRequestException.class,
            () -> choose(serving(TaskType.T2V, TaskType.T2I), true, 81));
    assertEquals(
        "model 'tiny-4step' takes no input image (it serves t2v, t2i); --image needs an"
            + " image-to-video model",
        e.getMessage());
    assertEquals(Optional.of(Request.IMAGE), e.field());
  }

  @Test
  void noImageToAnI2vOnlyCardIsRefusedNamingHowToGiveOne() {
    var e =
        assertThrows(
            InvalidRequestException.class,
            () -> TaskChoice.forInputs(serving(TaskType.I2V), false, 81, "input_reference"));
    assertEquals(
        "model 'tiny-4step' needs an input image, its first frame (it serves i2v): give"
            + " input_reference",
        e.getMessage());
    assertEquals(Optional.of(Request.IMAGE), e.field());
  }
}

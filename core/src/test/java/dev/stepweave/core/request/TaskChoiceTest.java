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

  private static TaskType choose(ModelCard card, boolean image) {
    return TaskChoice.forVideo(card, image, "--image");
  }

  @Test
  void anImageMeansI2vWhereServedElseTi2v() {
    assertEquals(TaskType.I2V, choose(serving(TaskType.I2V), true));
    assertEquals(TaskType.I2V, choose(serving(TaskType.I2V, TaskType.T2V), true));
    assertEquals(TaskType.TI2V, choose(serving(TaskType.TI2V), true));
  }

  @Test
  void noImageMeansT2vWhereServedElseTi2vsTextMode() {
    assertEquals(TaskType.T2V, choose(serving(TaskType.T2V, TaskType.T2I), false));
    assertEquals(TaskType.T2V, choose(serving(TaskType.T2V, TaskType.I2V), false));
    assertEquals(TaskType.TI2V, choose(serving(TaskType.TI2V), false));
    // Left for the engine to refuse, naming the card's tasks.
    assertEquals(TaskType.T2V, choose(serving(TaskType.T2I), false));
  }

  @Test
  void anImageToATextOnlyCardIsRefusedNamingItsTasks() {
    var e =
        assertThrows(
            InvalidRequestException.class, () -> choose(serving(TaskType.T2V, TaskType.T2I), true));
    assertEquals(
        "model 'tiny-4step' takes no input image (it serves t2i, t2v); --image needs an"
            + " image-to-video model",
        e.getMessage());
    assertEquals(Optional.of(Request.IMAGE), e.field());
  }

  @Test
  void noImageToAnI2vOnlyCardIsRefusedNamingHowToGiveOne() {
    var e =
        assertThrows(
            InvalidRequestException.class,
            () -> TaskChoice.forVideo(serving(TaskType.I2V), false, "input_reference"));
    assertEquals(
        "model 'tiny-4step' needs an input image, its first frame (it serves i2v): give"
            + " input_reference",
        e.getMessage());
    assertEquals(Optional.of(Request.IMAGE), e.field());
  }
}

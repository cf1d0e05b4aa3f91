package dev.stepweave.training.shapes;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.stepweave.models.wan.embedded.EmbeddedWan;
import java.util.Arrays;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The caption form the CLI's notes and help name for the embedded model ({@link
 * EmbeddedWan#CAPTIONS}, in the models module, which cannot see this one) is the shapes dataset's,
 * value for value.
 */
class EmbeddedCaptionsTest {
  @Test
  void theEmbeddedModelsCaptionFormIsTheDatasets() {
    String form =
        ShapeCaption.TEMPLATE
            .replace("{color}", alternatives(ObjectColor.values()))
            .replace("{shape}", alternatives(Shape.values()))
            .replace("{direction}", alternatives(Direction.values()))
            .replace("{background}", alternatives(Background.values()));
    assertEquals(form, EmbeddedWan.CAPTIONS);
  }

  private static String alternatives(Word[] words) {
    return Arrays.stream(words).map(Word::word).collect(Collectors.joining("|", "{", "}"));
  }
}

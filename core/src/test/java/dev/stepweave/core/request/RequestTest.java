package dev.stepweave.core.request;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.stepweave.core.card.TaskType;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Each bad setting gets an InvalidRequestException whose one-line message names it. */
class RequestTest {
  static DiffusionParams params(int steps, double guidance, int w, int h, int frames) {
    return new DiffusionParams(
        steps, guidance, 7, w, h, frames, 16, "", Optional.empty(), Optional.empty());
  }

  private static String rejection(Request r) {
    return assertThrows(InvalidRequestException.class, r::validate).getMessage();
  }

  @Test
  void goodRequestsPass() {
    assertDoesNotThrow(
        () -> Request.text(TaskType.T2V, "a red ball", params(50, 5, 832, 480, 81)).validate());
    assertDoesNotThrow(
        () -> Request.text(TaskType.T2I, "a red ball", params(1, 0, 16, 16, 1)).validate());
  }

  @Test
  void badInputsAreNamed() {
    assertEquals(
        "prompt is empty",
        rejection(Request.text(TaskType.T2V, "  ", params(50, 5, 832, 480, 81))));
    assertEquals(
        "size must be positive multiples of 16, got 830x480",
        rejection(Request.text(TaskType.T2V, "x", params(50, 5, 830, 480, 81))));
    assertEquals(
        "frames must be 4k+1 (1, 5, 9, …, 81), got 80",
        rejection(Request.text(TaskType.T2V, "x", params(50, 5, 832, 480, 80))));
    assertEquals(
        "steps must be between 1 and 1000, got 0",
        rejection(Request.text(TaskType.T2V, "x", params(0, 5, 832, 480, 81))));
    assertEquals(
        "steps must be between 1 and 1000, got 1001",
        rejection(Request.text(TaskType.T2V, "x", params(1001, 5, 832, 480, 81))));
    assertEquals(
        "guidance must be a finite number >= 0, got -1.0",
        rejection(Request.text(TaskType.T2V, "x", params(50, -1, 832, 480, 81))));
    assertEquals(
        "guidance must be a finite number >= 0, got NaN",
        rejection(Request.text(TaskType.T2V, "x", params(50, Double.NaN, 832, 480, 81))));
    assertEquals(
        "a t2i request makes one frame, got frames=5",
        rejection(Request.text(TaskType.T2I, "x", params(50, 5, 832, 480, 5))));
    var badSampler =
        new DiffusionParams(4, 5, 1, 32, 32, 1, 8, "", Optional.of("ddim"), Optional.empty());
    assertEquals(
        "sampler must be unipc, euler or sde, got 'ddim'",
        rejection(Request.text(TaskType.T2I, "x", badSampler)));
  }

  @Test
  void aBuilderDefaultsEveryOptionalFieldAndToBuilderCopiesThemAll() {
    Request plain = Request.builder(TaskType.T2V, params(4, 5, 16, 16, 5)).prompt("a cat").build();
    assertEquals(OutputSpec.DEFAULT, plain.output());
    assertEquals(Map.of(), plain.nodeOverrides());
    assertEquals(Map.of(), plain.plugins());
    assertFalse(plain.overrideRecipe());
    assertFalse(plain.exact());

    Request full =
        plain.toBuilder()
            .output(OutputSpec.WITH_LATENTS)
            .nodeOverrides(Map.of("vae_decode", Map.of("tile", "off")))
            .overrideRecipe(true)
            .plugins(Map.of("dbcache", Map.of()))
            .exact(true)
            .build();
    assertEquals(plain.id(), full.id());
    assertEquals(full, full.toBuilder().build());
  }

  private static Request withImages(TaskType task, int images) {
    java.util.List<ModalPart> inputs = new java.util.ArrayList<>();
    inputs.add(new ModalPart.Text("a red ball"));
    for (int i = 0; i < images; i++) {
      inputs.add(new ModalPart.Image(2, 2, new byte[12], "sha-" + i));
    }
    int frames = task == TaskType.T2I ? 1 : 81;
    return Request.builder(task, params(50, 5, 832, 480, frames)).inputs(inputs).build();
  }

  @Test
  void theTaskDecidesHowManyImagesARequestCarries() {
    assertDoesNotThrow(() -> withImages(TaskType.I2V, 1).validate());
    assertDoesNotThrow(() -> withImages(TaskType.TI2V, 0).validate());
    assertDoesNotThrow(() -> withImages(TaskType.TI2V, 1).validate());
    assertEquals(
        "an i2v request needs an input image (image / input_reference); none was given",
        rejection(withImages(TaskType.I2V, 0)));
    assertEquals(
        "an i2v request takes one input image, got 2", rejection(withImages(TaskType.I2V, 2)));
    assertEquals(
        "a ti2v request takes at most one input image, got 2",
        rejection(withImages(TaskType.TI2V, 2)));
    assertEquals(
        "a t2v request takes no input image (got 1); image-to-video is task i2v",
        rejection(withImages(TaskType.T2V, 1)));
    assertEquals(
        "a t2i request takes no input image (got 1); image-to-video is task i2v",
        rejection(withImages(TaskType.T2I, 1)));
    var e = assertThrows(InvalidRequestException.class, withImages(TaskType.I2V, 0)::validate);
    assertEquals(Optional.of(Request.IMAGE), e.field());
  }

  @Test
  void anImageOutsideTheSizeLimitsIsRefusedNamingTheField() {
    var e =
        assertThrows(
            InvalidRequestException.class, () -> new ModalPart.Image(0, 4, new byte[0], "00"));
    assertEquals("image must be 1..8192 pixels on each side, got 0x4", e.getMessage());
    assertEquals(Optional.of(Request.IMAGE), e.field());
  }
}

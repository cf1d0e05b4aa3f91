package dev.stepweave.models.clip;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.parity.Comparison;
import dev.stepweave.models.GoldenBounds;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.SafetensorsFile;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * C0 parity of the CLIP image processor and vision encoder against transformers' recording on the
 * Wan2.1 I2V golden checkpoint ({@code clip.safetensors}).
 */
class ClipParityTest {
  private static Backend backend;
  private static SafetensorsFile recording;
  private static ClipVisionEncoder encoder;
  private static ClipImageProcessor processor;

  @BeforeAll
  static void load() {
    backend = new CpuBackend(2);
    recording = SafetensorsFile.open(ClipGoldens.RECORDING);
    encoder = ClipGoldens.encoder(backend);
    processor = ClipImageProcessor.read(ClipGoldens.PROCESSOR_CONFIG);
  }

  @AfterAll
  static void close() {
    recording.close();
  }

  private static RgbImage goldenImage() {
    return RgbImage.of(recording.load("image_uint8"));
  }

  private static Tensor embeds(Tensor pixelValues) {
    return backend.download(encoder.penultimateHiddenState(pixelValues));
  }

  private static Comparison assertWithin(
      String name, Tensor actual, Tensor expected, String bound) {
    Comparison c = Comparison.of(name, actual, expected, GoldenBounds.tolerance(bound));
    System.out.println(c.line());
    assertTrue(c.passed(), c.line());
    return c;
  }

  @Test
  void pixelValuesFromTheImageMatchTheProcessor() {
    assertWithin(
        "clip/pixel_values",
        processor.preprocess(goldenImage()),
        recording.loadF32("pixel_values"),
        "pixel_values");
  }

  @Test
  void imageEmbedsFromRecordedPixelValuesMatchHiddenStatesMinusTwo() {
    assertWithin(
        "clip/image_embeds",
        embeds(recording.loadF32("pixel_values")),
        recording.loadF32("image_embeds"),
        "clip");
  }

  @Test
  void imageEmbedsFromTheImageEndToEnd() {
    assertWithin(
        "clip/image_embeds(image_uint8)",
        embeds(processor.preprocess(goldenImage())),
        recording.loadF32("image_embeds"),
        "clip");
  }

  @Test
  void twoImagesBatchedGiveEachImagesOwnResult() {
    RgbImage first = goldenImage();
    RgbImage second = mirrored(first);
    Tensor batched = processor.preprocess(List.of(first, second));
    Tensor firstAlone = processor.preprocess(first);
    Tensor secondAlone = processor.preprocess(second);
    assertArrayEquals(
        firstAlone.toFloatArray(), batched.slice(0, 0, 1).toFloatArray(), "pixel_values row 0");
    assertArrayEquals(
        secondAlone.toFloatArray(), batched.slice(0, 1, 2).toFloatArray(), "pixel_values row 1");

    Tensor both = embeds(batched);
    assertArrayEquals(
        embeds(firstAlone).toFloatArray(), both.slice(0, 0, 1).toFloatArray(), "embeds row 0");
    assertArrayEquals(
        embeds(secondAlone).toFloatArray(), both.slice(0, 1, 2).toFloatArray(), "embeds row 1");
  }

  /** The image flipped left to right: the same size, different pixels. */
  private static RgbImage mirrored(RgbImage image) {
    byte[] rgb = new byte[image.rgb().length];
    for (int y = 0; y < image.height(); y++) {
      for (int x = 0; x < image.width(); x++) {
        int from = (y * image.width() + x) * 3;
        int to = (y * image.width() + image.width() - 1 - x) * 3;
        System.arraycopy(image.rgb(), from, rgb, to, 3);
      }
    }
    return new RgbImage(image.width(), image.height(), rgb);
  }
}

package dev.stepweave.models.clip;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.tensor.io.CheckpointException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Both CLIP configs read every field and refuse what they do not implement in one line. */
class ClipConfigTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;

  @Test
  void theGoldenVisionConfigReadsEveryDimension() {
    ClipVisionConfig c = ClipGoldens.config();
    assertEquals(
        new ClipVisionConfig(24, 48, 3, 2, 32, 8, 3, 1e-5f, ClipVisionConfig.Activation.GELU), c);
    assertEquals(12, c.headDim());
    assertEquals(17, c.numPositions());
  }

  @Test
  void quickGeluIsAccepted() throws IOException {
    Path file = editedVisionConfig(n -> n.put("hidden_act", "quick_gelu"));
    assertEquals(ClipVisionConfig.Activation.QUICK_GELU, ClipVisionConfig.read(file).hiddenAct());
  }

  @Test
  void anUnknownActivationFailsNamingFileAndField() throws IOException {
    Path file = editedVisionConfig(n -> n.put("hidden_act", "gelu_new"));
    CheckpointException e =
        assertThrows(CheckpointException.class, () -> ClipVisionConfig.read(file));
    assertOneLine(e, file.toString(), "hidden_act 'gelu_new'");
  }

  @Test
  void aMissingDimensionFailsNamingIt() throws IOException {
    Path file = editedVisionConfig(n -> n.remove("intermediate_size"));
    CheckpointException e =
        assertThrows(CheckpointException.class, () -> ClipVisionConfig.read(file));
    assertOneLine(e, file.toString(), "'intermediate_size'");
  }

  @Test
  void headsThatDoNotSplitTheWidthFail() throws IOException {
    Path file = editedVisionConfig(n -> n.put("num_attention_heads", 5));
    CheckpointException e =
        assertThrows(CheckpointException.class, () -> ClipVisionConfig.read(file));
    assertOneLine(e, file.toString(), "num_attention_heads 5");
  }

  @Test
  void anotherModelTypeFails() throws IOException {
    Path file = editedVisionConfig(n -> n.put("model_type", "siglip_vision_model"));
    CheckpointException e =
        assertThrows(CheckpointException.class, () -> ClipVisionConfig.read(file));
    assertOneLine(e, file.toString(), "model_type 'siglip_vision_model'");
  }

  @Test
  void aWholeClipConfigYieldsItsVisionConfig() throws IOException {
    ObjectNode vision = (ObjectNode) JSON.readTree(configFile().toFile());
    ObjectNode whole = JSON.createObjectNode().put("model_type", "clip");
    whole.set("vision_config", vision);
    Path file = dir.resolve("config.json");
    Files.writeString(file, whole.toString());
    assertEquals(ClipGoldens.config(), ClipVisionConfig.read(file));
  }

  @Test
  void theGoldenProcessorConfigReadsEverySetting() {
    ClipImageProcessor p = ClipImageProcessor.read(ClipGoldens.PROCESSOR_CONFIG);
    assertEquals(32, p.shortestEdge());
    assertEquals(32, p.cropHeight());
    assertEquals(32, p.cropWidth());
    assertTrue(p.rescale());
    assertEquals(1.0 / 255, p.rescaleFactor(), 1e-15);
    assertTrue(p.normalize());
    assertEquals(List.of(0.48145466f, 0.4578275f, 0.40821073f), p.mean());
    assertEquals(List.of(0.26862954f, 0.26130258f, 0.27577711f), p.std());
  }

  @Test
  void theShortestEdgeGoesToTheSizeAndTheOtherIsRoundedDown() {
    ClipImageProcessor p = ClipImageProcessor.read(ClipGoldens.PROCESSOR_CONFIG);
    assertArrayEquals(new int[] {43, 32}, p.resizedSize(61, 45)); // 32 · 61 / 45 = 43.4
    assertArrayEquals(new int[] {32, 64}, p.resizedSize(50, 100));
    assertArrayEquals(new int[] {32, 32}, p.resizedSize(7, 7));
  }

  @Test
  void anotherResamplingFilterFailsNamingFileAndField() throws IOException {
    Path file = editedProcessorConfig(n -> n.put("resample", 2));
    CheckpointException e =
        assertThrows(CheckpointException.class, () -> ClipImageProcessor.read(file));
    assertOneLine(e, file.toString(), "resample 2");
  }

  @Test
  void anotherKindOfSizeFails() throws IOException {
    Path file = editedProcessorConfig(n -> n.putObject("size").put("height", 32).put("width", 32));
    CheckpointException e =
        assertThrows(CheckpointException.class, () -> ClipImageProcessor.read(file));
    assertOneLine(e, file.toString(), "size.height");
  }

  @Test
  void anUnknownSettingFails() throws IOException {
    Path file = editedProcessorConfig(n -> n.put("do_pad", true));
    CheckpointException e =
        assertThrows(CheckpointException.class, () -> ClipImageProcessor.read(file));
    assertOneLine(e, file.toString(), "'do_pad'");
  }

  @Test
  void aCropLargerThanTheResizedEdgeFails() throws IOException {
    Path file = editedProcessorConfig(n -> n.put("crop_size", 40));
    CheckpointException e =
        assertThrows(CheckpointException.class, () -> ClipImageProcessor.read(file));
    assertOneLine(e, file.toString(), "crop_size 40x40");
  }

  @Test
  void legacyNumericSizesAndOffSwitchesAreRead() throws IOException {
    Path file =
        editedProcessorConfig(
            n -> n.put("size", 40).put("crop_size", 36).put("do_normalize", false));
    ClipImageProcessor p = ClipImageProcessor.read(file);
    assertEquals(40, p.shortestEdge());
    assertEquals(36, p.cropHeight());
    assertEquals(36, p.cropWidth());
    assertFalse(p.normalize());
  }

  private Path configFile() {
    return ClipGoldens.IMAGE_ENCODER.resolve("config.json");
  }

  private Path editedVisionConfig(Consumer<ObjectNode> edit) throws IOException {
    return edited(configFile(), "config.json", edit);
  }

  private Path editedProcessorConfig(Consumer<ObjectNode> edit) throws IOException {
    return edited(ClipGoldens.PROCESSOR_CONFIG, "preprocessor_config.json", edit);
  }

  private Path edited(Path source, String name, Consumer<ObjectNode> edit) throws IOException {
    ObjectNode node = (ObjectNode) JSON.readTree(source.toFile());
    edit.accept(node);
    Path file = dir.resolve(name);
    Files.writeString(file, node.toString());
    return file;
  }

  static void assertOneLine(Exception e, String... parts) {
    String message = e.getMessage();
    assertFalse(message.contains("\n"), "one line: " + message);
    for (String part : parts) {
      assertTrue(message.contains(part), "'" + part + "' in: " + message);
    }
  }
}

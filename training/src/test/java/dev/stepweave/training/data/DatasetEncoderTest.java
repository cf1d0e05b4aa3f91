package dev.stepweave.training.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.models.wan.embedded.EmbeddedWan;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.training.shapes.ShapeSample;
import dev.stepweave.training.shapes.ShapesDataset;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Prepare on the embedded model: shards hold what the serving components compute. */
class DatasetEncoderTest {
  @TempDir static Path home;
  @TempDir Path tmp;

  private static WanModel model;

  @BeforeAll
  static void load() {
    model = WanModel.load(EmbeddedWan.ensure(home), new CpuBackend(2));
  }

  @AfterAll
  static void close() {
    model.close();
  }

  /** A dataset folder of {@code n} shapes clips in the test's raw format. */
  private Path shapesFolder(int n, int width, int height, int frames) throws Exception {
    Path dir = Files.createDirectories(tmp.resolve("data"));
    ShapesDataset shapes = new ShapesDataset(3, width, height, frames);
    List<DatasetEntry> entries = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      ShapeSample s = shapes.sample(i);
      RawClips.write(dir.resolve(s.id() + ".raw"), s.clip());
      entries.add(new DatasetEntry(s.id(), s.caption().text(), s.id() + ".raw"));
    }
    DatasetFolder.writeCaptions(dir, entries);
    return dir;
  }

  @Test
  void shardsHoldTheServingEmbeddingsAndLatentsInOrder() throws Exception {
    Path data = shapesFolder(5, 64, 64, 9);
    Path out = Files.createDirectories(tmp.resolve("shards"));
    DatasetFolder folder = DatasetFolder.open(data);
    List<Integer> progress = new ArrayList<>();

    ShardIndex index =
        new DatasetEncoder(model).prepare(folder, RawClips::read, out, 2, progress::add);

    assertEquals(List.of(1, 2, 3, 4, 5), progress);
    assertEquals(List.of(2, 2, 1), index.shards().stream().map(ShardIndex.Shard::samples).toList());
    assertEquals(EmbeddedWan.MODEL_ID, index.modelId());
    assertEquals(folder.contentHash(), index.datasetSha256());
    assertEquals(EmbeddedWan.MAX_SEQUENCE_LENGTH, index.maxSequenceLength());
    try (LatentShards shards = LatentShards.open(out)) {
      assertEquals(5, shards.size());
      for (int i = 0; i < 5; i++) {
        LatentSample s = shards.get(i);
        assertEquals(folder.entries().get(i).id(), s.id());
        assertEquals(folder.entries().get(i).caption(), s.caption());
        // The embedded VAE: 8 channels, every frame kept, 4x in space.
        assertArrayEquals(new int[] {8, 9, 16, 16}, s.latents().shape());
        assertArrayEquals(
            new int[] {EmbeddedWan.MAX_SEQUENCE_LENGTH, 32}, s.promptEmbeds().shape());
      }
      LatentSample first = shards.get(0);
      // The text_encode loop of a served request for the same caption computes the same tensor.
      var served = servedTextEncoding(first.caption());
      assertArrayEquals(served.get("prompt_embeds"), first.promptEmbeds().toFloatArray());
      RgbClip clip = RawClips.read(data.resolve(first.id() + ".raw"));
      assertArrayEquals(
          new DatasetEncoder(model)
              .encode(first.id(), first.caption(), clip)
              .latents()
              .toFloatArray(),
          first.latents().toFloatArray());
      assertArrayEquals(
          served.get("negative_prompt_embeds"), shards.negativePromptEmbeds().toFloatArray());
    }
  }

  /** The served text_encode loop's outputs for {@code prompt} and the empty negative prompt. */
  private static Map<String, float[]> servedTextEncoding(String prompt) throws Exception {
    try (Engine engine = new Engine(model)) {
      var params =
          new DiffusionParams(1, 5.0, 0, 32, 32, 1, 8, "", Optional.empty(), Optional.empty());
      var result = engine.submit(Request.text(TaskType.T2V, prompt, params)).result();
      Map<String, Tensor> out =
          result.get(120, TimeUnit.SECONDS).loopResults().get("text_encode").tensors();
      return Map.of(
          "prompt_embeds", out.get("prompt_embeds").select(0, 0).toFloatArray(),
          "negative_prompt_embeds", out.get("negative_prompt_embeds").select(0, 0).toFloatArray());
    }
  }

  @Test
  void aClipTheModelWouldNotServeIsRefusedNamingTheEntry() throws Exception {
    Path data = shapesFolder(1, 72, 64, 9);
    Path out = Files.createDirectories(tmp.resolve("shards"));
    var e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                new DatasetEncoder(model)
                    .prepare(DatasetFolder.open(data), RawClips::read, out, 4, n -> {}));
    assertEquals(
        "entry 'shapes-000000' (9 frames of 72x64): size must be positive multiples of 16, got"
            + " 72x64",
        e.getMessage());

    var frames =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                new DatasetEncoder(model)
                    .encode("x", "a caption", new ShapesDataset(1, 64, 64, 8).sample(0).clip()));
    assertEquals(
        "entry 'x' (8 frames of 64x64): frames must be 4k+1 (1, 5, 9, …, 81), got 8",
        frames.getMessage());
  }

  @Test
  void anUndecodableClipIsRefusedNamingTheEntry() throws Exception {
    Path data = shapesFolder(1, 64, 64, 9);
    Files.write(data.resolve("shapes-000000.raw"), new byte[] {0, 0, 0, 1});
    var e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                new DatasetEncoder(model)
                    .prepare(
                        DatasetFolder.open(data),
                        RawClips::read,
                        Files.createDirectories(tmp.resolve("shards")),
                        4,
                        n -> {}));
    assertTrue(e.getMessage().startsWith("entry 'shapes-000000': "), e.getMessage());
  }
}

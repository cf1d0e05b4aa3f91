package dev.stepweave.training.run;

import dev.stepweave.models.wan.WanModel;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.training.data.ClipDecoder;
import dev.stepweave.training.data.DatasetEncoder;
import dev.stepweave.training.data.DatasetEntry;
import dev.stepweave.training.data.DatasetFolder;
import dev.stepweave.training.data.LatentSample;
import dev.stepweave.training.data.LatentShards;
import dev.stepweave.training.data.RgbClip;
import dev.stepweave.training.shapes.ShapeSample;
import dev.stepweave.training.shapes.ShapesDataset;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.function.Consumer;

/**
 * Reads a run's data into memory. Clips for the transformer go through the base checkpoint's own
 * text encoder and VAE encoder ({@link DatasetEncoder}, exactly as {@code stepweave prepare} and
 * serving encode them); shards are read as prepared.
 */
final class TrainingDataLoader {
  private TrainingDataLoader() {}

  /**
   * @param checkpoint the run's base checkpoint (its encoders encode clips for the transformer)
   * @param notes told what is being done, for the progress display
   */
  static TrainingData load(
      TrainConfig config, Path checkpoint, ClipDecoder decoder, Consumer<String> notes)
      throws IOException {
    if (config.data() instanceof TrainConfig.Data.Shards s) {
      return shards(s.dir());
    }
    Clips clips =
        switch (config.data()) {
          case TrainConfig.Data.Shapes s -> shapes(s, notes);
          case TrainConfig.Data.Folder f -> folder(f.dir(), decoder, notes);
          case TrainConfig.Data.Shards s -> throw new IllegalStateException("read above");
        };
    if (config.component() == TrainConfig.Component.VAE) {
      return new TrainingData.Clips(clips.clips, clips.ids, clips.id, clips.sha256);
    }
    notes.accept(
        "encoding " + clips.clips.size() + " clips through the base's text encoder and VAE");
    try (WanModel model = WanModel.load(checkpoint, new CpuBackend())) {
      DatasetEncoder encoder = new DatasetEncoder(model);
      List<LatentSample> samples = new ArrayList<>();
      for (int i = 0; i < clips.clips.size(); i++) {
        samples.add(encoder.encode(clips.ids.get(i), clips.captions.get(i), clips.clips.get(i)));
      }
      int length = samples.getFirst().promptEmbeds().dim(0);
      return new TrainingData.Latents(
          samples, encoder.negativePromptEmbeds(length), clips.id, clips.sha256);
    }
  }

  private record Clips(
      List<RgbClip> clips, List<String> ids, List<String> captions, String id, String sha256) {}

  private static TrainingData shards(Path dir) {
    try (LatentShards shards = LatentShards.open(dir)) {
      List<LatentSample> samples = new ArrayList<>();
      for (int i = 0; i < shards.size(); i++) {
        samples.add(shards.get(i));
      }
      return new TrainingData.Latents(
          samples,
          shards.negativePromptEmbeds(),
          "latent shards " + dir.getFileName() + " of " + shards.index().modelId(),
          shards.index().datasetSha256());
    }
  }

  private static Clips shapes(TrainConfig.Data.Shapes s, Consumer<String> notes) {
    notes.accept("rendering " + s.clips() + " shapes clips");
    ShapesDataset dataset = new ShapesDataset(s.seed(), s.width(), s.height(), s.frames());
    MessageDigest digest = sha256();
    List<RgbClip> clips = new ArrayList<>();
    List<String> ids = new ArrayList<>();
    List<String> captions = new ArrayList<>();
    for (int i = 0; i < s.clips(); i++) {
      ShapeSample sample = dataset.sample(i);
      clips.add(sample.clip());
      ids.add(sample.id());
      captions.add(sample.caption().text());
      digest.update(sample.caption().text().getBytes(StandardCharsets.UTF_8));
      digest.update(sample.clip().bytes());
    }
    String id =
        String.format(
            Locale.ROOT,
            "shapes seed %d, %dx%d, %d frames, clips 0-%d",
            s.seed(),
            s.width(),
            s.height(),
            s.frames(),
            s.clips() - 1);
    return new Clips(clips, ids, captions, id, HexFormat.of().formatHex(digest.digest()));
  }

  private static Clips folder(Path dir, ClipDecoder decoder, Consumer<String> notes)
      throws IOException {
    DatasetFolder folder = DatasetFolder.open(dir);
    notes.accept("decoding " + folder.entries().size() + " clips of " + dir);
    List<RgbClip> clips = new ArrayList<>();
    List<String> ids = new ArrayList<>();
    List<String> captions = new ArrayList<>();
    for (DatasetEntry e : folder.entries()) {
      try {
        clips.add(decoder.decode(folder.media(e)));
      } catch (IOException | IllegalArgumentException ex) {
        throw new IllegalArgumentException("entry '" + e.id() + "': " + ex.getMessage(), ex);
      }
      ids.add(e.id());
      captions.add(e.caption());
    }
    return new Clips(
        clips, ids, captions, "dataset folder " + dir.getFileName(), folder.contentHash());
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}

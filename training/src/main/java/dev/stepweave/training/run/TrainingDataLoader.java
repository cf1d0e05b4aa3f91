package dev.stepweave.training.run;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.models.sampling.SamplerSchedule;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.training.data.ClipDecoder;
import dev.stepweave.training.data.DatasetEncoder;
import dev.stepweave.training.data.DatasetEntry;
import dev.stepweave.training.data.DatasetFolder;
import dev.stepweave.training.data.LatentSample;
import dev.stepweave.training.data.LatentShards;
import dev.stepweave.training.data.RgbClip;
import dev.stepweave.training.distill.FewStepDistillation;
import dev.stepweave.training.distill.Segment;
import dev.stepweave.training.shapes.ShapeSample;
import dev.stepweave.training.shapes.ShapesDataset;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
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
   * @param encodeOn the backend those encoders run on: the run's own, so a GPU run encodes on the
   *     GPU (again on every resume: the latents are not kept)
   * @param notes told what is being done, for the progress display
   */
  static TrainingData load(
      TrainConfig config,
      Path checkpoint,
      ClipDecoder decoder,
      Backend encodeOn,
      Consumer<String> notes)
      throws IOException {
    if (config.data() instanceof TrainConfig.Data.Shards s) {
      return shards(s.dir());
    }
    if (config.data() instanceof TrainConfig.Data.Prompts p) {
      return switch (config.method()) {
        case TrainConfig.Method.Distill d -> segmentsOf(p, d, checkpoint, notes);
        case TrainConfig.Method.Nft n -> rollouts(p, n);
        default -> throw new IllegalStateException("prompts are a distillation's or an RL run's");
      };
    }
    Clips clips =
        switch (config.data()) {
          case TrainConfig.Data.Shapes s -> shapes(s, notes);
          case TrainConfig.Data.Folder f -> folder(f.dir(), decoder, notes);
          case TrainConfig.Data.Shards s -> throw new IllegalStateException("read above");
          case TrainConfig.Data.Prompts p -> throw new IllegalStateException("read above");
        };
    if (config.component() == TrainConfig.Component.VAE) {
      return new TrainingData.Clips(clips.clips, clips.ids, clips.id, clips.sha256);
    }
    notes.accept(
        "encoding " + clips.clips.size() + " clips through the base's text encoder and VAE");
    try (WanModel model = WanModel.load(checkpoint, encodeOn)) {
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

  /** How long the teacher's rollouts of one prompt may take. */
  private static final Duration TEACHER_TIMEOUT = Duration.ofMinutes(30);

  /**
   * The teacher (the base) rolls out every prompt through an engine serving it; its trajectories,
   * cut at the student's schedule, are the data. Deterministic on the CPU, so a resumed run cuts
   * the same segments.
   */
  private static TrainingData segmentsOf(
      TrainConfig.Data.Prompts p,
      TrainConfig.Method.Distill d,
      Path teacher,
      Consumer<String> notes) {
    notes.accept(
        String.format(
            Locale.ROOT,
            "rolling the teacher out: %d prompts x %d samples, euler %d steps, guidance %s",
            p.prompts().size(),
            p.samplesPerPrompt(),
            d.teacherSteps(),
            d.teacherGuidance()));
    try (WanModel model = WanModel.load(teacher, new CpuBackend());
        Engine engine = new Engine(model)) {
      SamplerSchedule schedule =
          FewStepDistillation.studentSchedule(
              engine, request(p, 0), d.studentSteps(), TEACHER_TIMEOUT);
      List<Segment> segments = new ArrayList<>();
      MessageDigest digest = sha256();
      for (int i = 0; i < p.prompts().size(); i++) {
        List<Segment> cut =
            FewStepDistillation.teacherSegments(
                engine,
                request(p, i),
                p.samplesPerPrompt(),
                p.seed() + (long) i * p.samplesPerPrompt(),
                d.teacherSteps(),
                d.teacherGuidance(),
                schedule,
                TEACHER_TIMEOUT);
        for (Segment s : cut) {
          for (Tensor t : List.of(s.start(), s.velocity())) {
            float[] v = t.toFloatArray();
            ByteBuffer bytes =
                ByteBuffer.allocate(v.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
            bytes.asFloatBuffer().put(v);
            digest.update(bytes.array());
          }
        }
        segments.addAll(cut);
      }
      String id =
          String.format(
              Locale.ROOT,
              "teacher %s samples: %d prompts x %d from seed %d, %dx%d, %d frames; euler %d steps,"
                  + " guidance %s; cut at %d steps",
              model.card().modelId(),
              p.prompts().size(),
              p.samplesPerPrompt(),
              p.seed(),
              p.width(),
              p.height(),
              p.frames(),
              d.teacherSteps(),
              d.teacherGuidance(),
              d.studentSteps());
      return new TrainingData.Segments(
          segments, schedule, id, HexFormat.of().formatHex(digest.digest()));
    }
  }

  /**
   * An RL run's prompts: rolled out during the run, not before. The data contract is the prompts,
   * the group size, the seed and the size; the samples themselves depend on the policy.
   */
  private static TrainingData rollouts(TrainConfig.Data.Prompts p, TrainConfig.Method.Nft n) {
    MessageDigest digest = sha256();
    for (String prompt : p.prompts()) {
      digest.update((prompt + "\n").getBytes(StandardCharsets.UTF_8));
    }
    String id =
        String.format(
            Locale.ROOT,
            "on-policy rollouts: %d prompts, groups of %d from seed %d, %dx%d, %d frames; %s %d"
                + " steps, no guidance; reward %s",
            p.prompts().size(),
            p.samplesPerPrompt(),
            p.seed(),
            p.width(),
            p.height(),
            p.frames(),
            n.sampler(),
            n.samplingSteps(),
            n.reward().key());
    return new TrainingData.Rollouts(p, id, HexFormat.of().formatHex(digest.digest()));
  }

  /** Prompt {@code i} of {@code p} as a request (its steps and sampler are the distillation's). */
  private static Request request(TrainConfig.Data.Prompts p, int i) {
    return Request.builder(
            TaskType.T2V,
            new DiffusionParams(
                1,
                1.0,
                0,
                p.width(),
                p.height(),
                p.frames(),
                8,
                "",
                Optional.of("euler"),
                Optional.empty()))
        .id("teacher-" + i)
        .prompt(p.prompts().get(i))
        .build();
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
    ShapesDataset dataset = s.dataset();
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
    String id = dataset.description(s.clips());
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

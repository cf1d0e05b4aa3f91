package dev.stepweave.training.run;

import dev.stepweave.models.sampling.SamplerSchedule;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.training.data.LatentSample;
import dev.stepweave.training.data.RgbClip;
import dev.stepweave.training.distill.Segment;
import java.util.Arrays;
import java.util.List;

/**
 * What a run trains on, in memory, with the identity its card records: latents and text embeddings
 * for the transformer, RGB clips for the VAE. Every sample of a set has one shape, so any of them
 * batch together.
 */
sealed interface TrainingData {
  /** What the data is, for the card's data contract. */
  String id();

  /** The SHA-256 of the data's content, for the card's data contract. */
  String sha256();

  int size();

  /** What one step's samples are drawn from, for the run's opening line. */
  default String describe() {
    return size() + " samples";
  }

  /**
   * Samples for the flow-matching objective.
   *
   * @param negative the empty prompt's embedding {@code [L, D]}, for caption dropout
   */
  record Latents(List<LatentSample> samples, Tensor negative, String id, String sha256)
      implements TrainingData {
    public Latents {
      samples = List.copyOf(samples);
      LatentSample first = samples.getFirst();
      for (LatentSample s : samples) {
        requireSame(s.id(), "latents", first.latents(), s.latents());
        requireSame(s.id(), "prompt embeddings", first.promptEmbeds(), s.promptEmbeds());
      }
      requireSame("the empty prompt", "prompt embeddings", first.promptEmbeds(), negative);
    }

    @Override
    public int size() {
      return samples.size();
    }
  }

  /** Clips for the reconstruction objective. */
  record Clips(List<RgbClip> clips, List<String> ids, String id, String sha256)
      implements TrainingData {
    public Clips {
      clips = List.copyOf(clips);
      ids = List.copyOf(ids);
      RgbClip first = clips.getFirst();
      for (int i = 0; i < clips.size(); i++) {
        RgbClip c = clips.get(i);
        if (c.frames() != first.frames()
            || c.height() != first.height()
            || c.width() != first.width()) {
          throw new IllegalArgumentException(
              "sample '"
                  + ids.get(i)
                  + "' is "
                  + c
                  + ", not the first sample's "
                  + first
                  + ": a run's clips must share one size");
        }
      }
    }

    @Override
    public int size() {
      return clips.size();
    }
  }

  /**
   * A distillation's: the teacher's path cut into the student's steps.
   *
   * @param schedule the student's schedule, the one its segments were cut at
   */
  record Segments(List<Segment> segments, SamplerSchedule schedule, String id, String sha256)
      implements TrainingData {
    public Segments {
      segments = List.copyOf(segments);
    }

    @Override
    public int size() {
      return segments.size();
    }
  }

  /**
   * An RL run's: the prompts its groups are rolled out on, each step anew under the current policy.
   * A step's samples are the members of its group, so {@link #size} is the group size K.
   */
  record Rollouts(TrainConfig.Data.Prompts prompts, String id, String sha256)
      implements TrainingData {
    @Override
    public int size() {
      return prompts.samplesPerPrompt();
    }

    @Override
    public String describe() {
      return "groups of " + size() + " rolled out on " + prompts.prompts().size() + " prompts";
    }
  }

  private static void requireSame(String id, String what, Tensor first, Tensor t) {
    if (!Arrays.equals(first.shape(), t.shape())) {
      throw new IllegalArgumentException(
          "sample '"
              + id
              + "' has "
              + what
              + " "
              + Arrays.toString(t.shape())
              + ", not the first sample's "
              + Arrays.toString(first.shape())
              + ": a run's samples must share one shape");
    }
  }
}

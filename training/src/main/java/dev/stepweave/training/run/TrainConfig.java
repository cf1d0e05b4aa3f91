package dev.stepweave.training.run;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.tensor.Precision;
import java.nio.file.Path;
import java.util.List;

/**
 * A training run as {@code stepweave train --config FILE} describes it (docs/training.md lists
 * every key). Read and checked by {@link TrainConfigReader} before anything loads; paths are
 * already resolved against the config file's folder.
 *
 * @param base the checkpoint directory to start from, or null for the embedded model
 * @param modelId the trained model's id on its card
 * @param component which component trains
 * @param init fresh weights for the trained component instead of the base's, or null
 * @param data what it trains on
 * @param method a full fine-tune, a LoRA, a distillation or NFT post-training
 * @param steps optimiser steps
 * @param batch samples per optimiser step
 * @param microBatch samples per forward/backward; {@code batch} must be a multiple of it
 * @param learningRate the peak learning rate
 * @param schedule how the rate moves over the steps
 * @param adamw AdamW's betas, epsilon and decoupled weight decay
 * @param maxGradNorm the global-norm clip, 0 for none
 * @param emaDecay the EMA's decay, or NaN for none
 * @param noiseLevels how the transformer's training draws σ: the flow shift (1: σ uniform) and the
 *     range
 * @param captionDropout the transformer's share of samples trained on the empty prompt
 * @param measureLatentStatistics the VAE's: measure its {@code latents_mean/std} over the training
 *     clips at the end and write them into its config
 * @param precision how the trained component computes: F32, or BF16 (bf16 activations and GEMMs
 *     over F32 weights, the optimiser in F32; on a GPU only)
 * @param seed fixes the data order, the noise and a LoRA's initial factors
 * @param checkpointEvery steps between checkpoints (the last step always writes one)
 * @param keepCheckpoints how many of the newest checkpoints a run keeps, 0 for all (not part of
 *     {@code canonical}: it changes no number, so a resume may change it)
 * @param evaluation an RL run's held-out reward measurement, or null for none
 * @param output the run's folder
 * @param canonical the config as read, every default filled in: what a resume must match
 */
public record TrainConfig(
    Path base,
    String modelId,
    Component component,
    Init init,
    Data data,
    Method method,
    int steps,
    int batch,
    int microBatch,
    double learningRate,
    Schedule schedule,
    Adam adamw,
    double maxGradNorm,
    double emaDecay,
    NoiseLevels noiseLevels,
    double captionDropout,
    boolean measureLatentStatistics,
    Precision precision,
    long seed,
    int checkpointEvery,
    int keepCheckpoints,
    Evaluation evaluation,
    Path output,
    ObjectNode canonical) {

  /** The component a run trains, by its folder name in a diffusers checkpoint. */
  public enum Component {
    /** The DiT, with the flow-matching objective on latents. */
    TRANSFORMER("transformer"),
    /** The VAE, with the reconstruction objective on RGB clips. */
    VAE("vae");

    private final String folder;

    Component(String folder) {
      this.folder = folder;
    }

    public String folder() {
      return folder;
    }
  }

  /**
   * Fresh weights for the trained component, laid out and initialised as the embedded model's,
   * under the base's component config with {@code config}'s keys replaced.
   *
   * @param pastFramesZero a VAE's causal convolutions start with their taps on earlier frames at
   *     zero, so the fresh VAE is a per-frame image VAE (3-D kernels inflated from 2-D ones)
   */
  public record Init(long seed, ObjectNode config, boolean pastFramesZero) {}

  /** Training data. */
  public sealed interface Data {
    /** The synthetic shapes dataset's first {@code clips} clips. */
    record Shapes(int clips, dev.stepweave.training.shapes.ShapesDataset dataset) implements Data {}

    /** A dataset folder (captions.jsonl and media). */
    record Folder(Path dir) implements Data {}

    /** Latent shards written by {@code stepweave prepare --data}. */
    record Shards(Path dir) implements Data {}

    /**
     * A distillation's or an RL run's prompts: the base (the teacher) rolls out {@code
     * samplesPerPrompt} samples of each prompt, seeds from {@code seed}; an RL run rolls out one
     * group of {@code samplesPerPrompt} (K) samples a step, cycling through the prompts. Both at
     * {@code width}×{@code height}×{@code frames}.
     */
    record Prompts(
        List<String> prompts, int samplesPerPrompt, long seed, int width, int height, int frames)
        implements Data {
      public Prompts {
        prompts = List.copyOf(prompts);
      }
    }
  }

  /** What is trained. */
  public sealed interface Method {
    String name();

    /** Every parameter of the component. */
    record Full() implements Method {
      @Override
      public String name() {
        return "full";
      }
    }

    /**
     * A LoRA on the transformer's layers whose names end in one of {@code targets} (all adaptable
     * layers when empty).
     */
    record Lora(int rank, double alpha, List<String> targets) implements Method {
      public Lora {
        targets = List.copyOf(targets);
      }

      @Override
      public String name() {
        return "lora";
      }
    }

    /**
     * Few-step CFG-free distillation of the base (the teacher, Euler at {@code teacherSteps} with
     * {@code teacherGuidance}) into a {@code studentSteps}-step student: every transformer
     * parameter, on the teacher's trajectories ({@code training.distill}).
     */
    record Distill(int studentSteps, int teacherSteps, double teacherGuidance) implements Method {
      @Override
      public String name() {
        return "distill";
      }
    }

    /**
     * DiffusionNFT-style online post-training of the transformer on a reward ({@code training.rl}):
     * each step rolls a group of one prompt out through an engine serving the current policy
     * (CFG-free, {@code samplingSteps} steps of {@code sampler}), scores it with {@code reward} and
     * takes one optimiser step of the NFT objective over the group.
     *
     * @param beta the implicit policies' strength β
     */
    record Nft(double beta, int samplingSteps, String sampler, Reward reward) implements Method {
      @Override
      public String name() {
        return "nft";
      }
    }
  }

  /** The reward plug-ins a config can name. */
  public enum Reward {
    /**
     * The programmatic shapes judge's score: the share of background, colour, shape and direction
     * of the decoded clip that match the caption (0, ¼, ½, ¾ or 1).
     */
    SHAPES,
    /**
     * The shapes judge's graded colour: how near the object's measured colour is to the caption's
     * ({@link dev.stepweave.training.shapes.ShapesJudge#colorNearness}).
     */
    SHAPES_COLOR;

    /** The name a config gives it. */
    public String key() {
      return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
    }
  }

  /**
   * An RL run's held-out measurement: the policy's mean reward on {@code prompts} ({@code
   * samplesPerPrompt} samples each, seeds from {@code seed} on, the rollouts' settings) before the
   * first step, every {@code every} steps and after the last, logged to {@code rewards.jsonl}.
   */
  public record Evaluation(List<String> prompts, int samplesPerPrompt, long seed, int every) {
    public Evaluation {
      prompts = List.copyOf(prompts);
    }
  }

  /** The learning-rate schedule's shape. */
  public enum ScheduleKind {
    CONSTANT,
    WARMUP,
    COSINE
  }

  public record Schedule(ScheduleKind kind, int warmup) {}

  public record Adam(double beta1, double beta2, double eps, double weightDecay) {}

  /** This config writing into {@code folder} instead (a benchmark's scratch run). */
  public TrainConfig withOutput(Path folder) {
    return new TrainConfig(
        base,
        modelId,
        component,
        init,
        data,
        method,
        steps,
        batch,
        microBatch,
        learningRate,
        schedule,
        adamw,
        maxGradNorm,
        emaDecay,
        noiseLevels,
        captionDropout,
        measureLatentStatistics,
        precision,
        seed,
        checkpointEvery,
        keepCheckpoints,
        evaluation,
        folder,
        canonical);
  }
}

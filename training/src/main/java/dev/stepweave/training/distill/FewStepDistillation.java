package dev.stepweave.training.distill;

import dev.stepweave.core.request.BehaviorCapture;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.models.sampling.SamplerSchedule;
import dev.stepweave.models.wan.transformer.AdapterRows;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.training.objective.FlowMatching;
import dev.stepweave.training.optim.Optimiser;
import dev.stepweave.training.rl.GroupRollout;
import dev.stepweave.training.wan.TrainableTransformer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;

/**
 * Few-step, CFG-free distillation by trajectory matching on the serving engine.
 *
 * <p>The teacher samples through the engine that serves — the Euler sampler at many steps with
 * classifier-free guidance, its whole trajectory captured ({@link GroupRollout}, {@link
 * BehaviorCapture#TRAJECTORY}) — and the student, initialised from the teacher, learns for each of
 * its own few noise levels the one velocity that carries the teacher's latents there to the
 * teacher's latents at its next level ({@link Segment}), conditioned on the prompt alone. One
 * student step then stands for many teacher steps, and one forward for the two of guidance.
 *
 * <p>Why this method: its targets are the teacher's own samples, exactly (the Euler path is
 * piecewise linear, so the teacher's latents at a student level are computed, not estimated); it
 * needs no discriminator, no second network and no auxiliary score model, unlike distribution
 * matching (DMD2); and unlike consistency distillation it trains at the very noise levels and
 * sampler the student will serve with, which the card's recipe then pins. What it gives up: the
 * student learns on the teacher's latents, not its own, so its errors can compound over its steps
 * (a second round on the student's own trajectories would correct that; not done).
 */
public final class FewStepDistillation {
  /**
   * @param studentSteps the student's steps (its recipe's step count)
   * @param teacherSteps the teacher's Euler steps
   * @param teacherGuidance the teacher's guidance scale
   * @param batch segments per optimiser step
   * @param optimiser the learning-rate schedule, AdamW, clipping and EMA
   * @param timeout how long one prompt's teacher rollouts may take
   */
  public record Settings(
      int studentSteps,
      int teacherSteps,
      double teacherGuidance,
      int batch,
      Optimiser.Settings optimiser,
      Duration timeout) {
    public Settings {
      if (studentSteps < 1 || teacherSteps <= studentSteps) {
        throw new IllegalArgumentException(
            "the teacher must take more steps than the student, got "
                + teacherSteps
                + " and "
                + studentSteps);
      }
      if (batch < 1) {
        throw new IllegalArgumentException("a batch needs at least one segment, got " + batch);
      }
    }
  }

  /** What one optimiser step did. */
  public record Step(int index, double loss) {}

  private final TrainableTransformer student;
  private final Map<String, Tensor> trainable;
  private final Settings settings;
  private final Optimiser optimiser;
  private final SamplerSchedule studentSchedule;
  private final List<Segment> segments = new ArrayList<>();
  private final SplittableRandom order;
  private int steps;

  /**
   * @param student the student's weights, the teacher's to begin with
   * @param studentSchedule the Euler schedule the student will serve with, at {@code studentSteps}
   * @param seed the seed of the order segments are drawn in
   */
  public FewStepDistillation(
      TrainableTransformer student, SamplerSchedule studentSchedule, Settings settings, long seed) {
    if (studentSchedule.steps() != settings.studentSteps()) {
      throw new IllegalArgumentException(
          "the student's schedule has "
              + studentSchedule.steps()
              + " steps, its settings "
              + settings.studentSteps());
    }
    this.student = student;
    this.trainable = student.parameters();
    this.settings = settings;
    this.optimiser = new Optimiser(settings.optimiser(), trainable);
    this.studentSchedule = studentSchedule;
    this.order = new SplittableRandom(seed);
  }

  /**
   * Rolls the teacher out on {@code prompt} for {@code samples} seeds from {@code firstSeed} and
   * keeps every sample's segments; returns how many segments are kept in all.
   *
   * @param teacher the engine serving the teacher
   * @param prompt the prompt, size and frames; its steps, guidance and sampler are the settings'
   */
  public int addTeacherSamples(Engine teacher, Request prompt, int samples, long firstSeed) {
    segments.addAll(
        teacherSegments(
            teacher,
            prompt,
            samples,
            firstSeed,
            settings.teacherSteps(),
            settings.teacherGuidance(),
            studentSchedule,
            settings.timeout()));
    return segments.size();
  }

  /**
   * The segments a student with schedule {@code student} learns from {@code samples} teacher
   * samples of {@code prompt} (seeds from {@code firstSeed}), the teacher sampling with Euler at
   * {@code teacherSteps} and {@code teacherGuidance} through {@code teacher}, its whole trajectory
   * captured.
   */
  public static List<Segment> teacherSegments(
      Engine teacher,
      Request prompt,
      int samples,
      long firstSeed,
      int teacherSteps,
      double teacherGuidance,
      SamplerSchedule student,
      Duration timeout) {
    Request asTeacher =
        prompt.withParams(
            prompt.params().withSampling(teacherSteps, teacherGuidance, Optional.of("euler")));
    List<Segment> out = new ArrayList<>();
    for (GroupRollout.Sample s :
        GroupRollout.run(
            teacher, asTeacher, samples, firstSeed, BehaviorCapture.TRAJECTORY, timeout)) {
      out.addAll(Segment.of(s.behavior(), student));
    }
    return out;
  }

  /**
   * The Euler schedule at {@code steps} the engine runs {@code prompt}'s settings with: what a
   * student of that many steps will serve with, read from one captured rollout.
   */
  public static SamplerSchedule studentSchedule(
      Engine engine, Request prompt, int steps, Duration timeout) {
    var record =
        GroupRollout.run(
                engine,
                prompt.withParams(prompt.params().withSampling(steps, 1.0, Optional.of("euler"))),
                1,
                0,
                BehaviorCapture.TRAJECTORY,
                timeout)
            .getFirst()
            .behavior();
    return new SamplerSchedule(record.timesteps(), record.sigmas());
  }

  /** One optimiser step on a batch of segments drawn at random from those kept. */
  public Step step() {
    if (segments.isEmpty()) {
      throw new IllegalStateException("no teacher samples yet: addTeacherSamples first");
    }
    Backend ops = student.backend();
    int n = settings.batch();
    Optimiser.Step s =
        optimiser.step(
            trainable,
            n,
            i -> {
              Segment seg = segments.get(order.nextInt(segments.size()));
              var e =
                  student.lossAndGradientsAt(
                      seg.start(),
                      seg.timestep(),
                      seg.context(),
                      trainable,
                      AdapterRows.NONE,
                      v -> FlowMatching.meanSquaredError(ops, v, seg.velocity()));
              return new Optimiser.Evaluation(1.0 / n, e.loss(), e.gradients());
            });
    return new Step(steps++, s.loss());
  }

  /** What made the student, for its card's recipe (after {@code steps} optimiser steps). */
  public static String provenance(int teacherSteps, double teacherGuidance, int steps, int batch) {
    return String.format(
        Locale.ROOT,
        "stepweave few-step distillation (trajectory matching): teacher euler %d steps,"
            + " guidance %s; %d optimiser steps of %d segments",
        teacherSteps,
        teacherGuidance,
        steps,
        batch);
  }

  /** {@link #provenance(int, double, int, int)} of this distillation so far. */
  public String provenance() {
    return provenance(settings.teacherSteps(), settings.teacherGuidance(), steps, settings.batch());
  }

  /** The student's weights now, by checkpoint name (what {@link Engine#syncWeights} takes). */
  public Map<String, Tensor> weights() {
    return trainable;
  }
}

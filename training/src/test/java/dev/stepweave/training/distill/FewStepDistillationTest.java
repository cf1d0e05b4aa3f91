package dev.stepweave.training.distill;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.RecipeRefusedException;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.request.BehaviorCapture;
import dev.stepweave.core.request.BehaviorRecord;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.InvalidRequestException;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.models.sampling.SamplerSchedule;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.models.wan.cache.StepCachePlugin;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.training.optim.AdamW;
import dev.stepweave.training.optim.LearningRate;
import dev.stepweave.training.optim.Optimiser;
import dev.stepweave.training.rl.GroupRollout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Few-step distillation end to end on the tiny golden checkpoint: the teacher (Euler, 24 steps,
 * guidance 5) rolls out through the serving engine, a student learns its path at 4 noise levels
 * without guidance, and on seeds and a prompt never trained on the student's 4-step, 4-forward
 * samples land nearer the teacher's 48-forward samples than the teacher's own 4-step samples do,
 * with guidance (8 forwards) or without (4). Written as a card of its own, the student serves with
 * its learned schedule by default, and its recipe refuses other settings and the step cache.
 */
class FewStepDistillationTest {
  @TempDir Path tmp;
  static final Path TINY = Path.of(System.getProperty("stepweave.golden"), "wan21-tiny");
  static final int TEACHER_STEPS = 24;
  static final int STUDENT_STEPS = 4;
  static final double GUIDANCE = 5.0;
  static final Duration TIMEOUT = Duration.ofMinutes(2);

  static Request prompt(String id, String text, int steps, double guidance) {
    return Request.builder(
            TaskType.T2V,
            new DiffusionParams(
                steps, guidance, 0, 32, 32, 5, 8, "", Optional.of("euler"), Optional.empty()))
        .id(id)
        .prompt(text)
        .nodeOverrides(Map.of("text_encode", Map.of("max_sequence_length", "16")))
        .build();
  }

  /** The final latents of one sample of {@code request} at {@code seed}. */
  static float[] sample(Engine engine, Request request, long seed, BehaviorCapture capture) {
    return GroupRollout.run(engine, request, 1, seed, capture, TIMEOUT)
        .getFirst()
        .behavior()
        .finalLatents()
        .toFloatArray();
  }

  static double meanSquared(float[] a, float[] b) {
    double sum = 0;
    for (int i = 0; i < a.length; i++) {
      double d = a[i] - b[i];
      sum += d * d;
    }
    return sum / a.length;
  }

  @Test
  void theFourStepStudentLandsNearerTheTeachersSamplesThanTheTeacherInFourSteps() throws Exception {
    DiffusersDirectory.Component component = DiffusersDirectory.open(TINY).component("transformer");
    try (WanModel model = WanModel.load(TINY, new CpuBackend());
        Engine engine = new Engine(model);
        TensorSource weights = component.openWeights()) {
      // The schedule the student will serve with: the engine's own 4-step Euler schedule.
      SamplerSchedule schedule =
          FewStepDistillation.studentSchedule(
              engine, prompt("schedule", "a red ball", 1, 1.0), STUDENT_STEPS, TIMEOUT);

      FewStepDistillation distill =
          new FewStepDistillation(
              dev.stepweave.training.wan.TrainableTransformer.load(
                  WanTransformerConfig.fromJson(component.config()), weights, new CpuBackend()),
              schedule,
              settings(),
              11);
      List<String> trainPrompts =
          List.of(
              "a red ball bouncing",
              "a blue square sliding",
              "a green ball falling",
              "a yellow square rising");
      int kept = 0;
      for (int p = 0; p < trainPrompts.size(); p++) {
        kept =
            distill.addTeacherSamples(
                engine, prompt("teach-" + p, trainPrompts.get(p), 1, 1.0), 4, 100L * p);
      }
      assertEquals(4 * 4 * STUDENT_STEPS, kept, "16 teacher samples, 4 segments each");
      double first = 0;
      double last = 0;
      for (int i = 0; i < 80; i++) {
        double loss = distill.step().loss();
        if (i < 10) {
          first += loss / 10;
        } else if (i >= 70) {
          last += loss / 10;
        }
      }

      // Held out: seeds no teacher sample used, on a trained prompt and on a new one.
      List<Request> heldOut =
          List.of(
              prompt("held-red", "a red ball bouncing", 1, 1.0),
              prompt("held-new", "a purple ball drifting", 1, 1.0));
      long[] seeds = {9001, 9002, 9003};
      double teacherFourCfg = 0;
      double teacherFour = 0;
      int n = heldOut.size() * seeds.length;
      float[][] references = new float[n][];
      int j = 0;
      for (Request r : heldOut) {
        for (long seed : seeds) {
          references[j] =
              sample(engine, steps(r, TEACHER_STEPS, GUIDANCE), seed, BehaviorCapture.FINAL);
          teacherFourCfg +=
              meanSquared(
                      sample(
                          engine, steps(r, STUDENT_STEPS, GUIDANCE), seed, BehaviorCapture.FINAL),
                      references[j])
                  / n;
          teacherFour +=
              meanSquared(
                      sample(engine, steps(r, STUDENT_STEPS, 1.0), seed, BehaviorCapture.FINAL),
                      references[j])
                  / n;
          j++;
        }
      }
      GroupRollout.publish(engine, distill.weights(), TIMEOUT); // the engine now serves the student
      double student = 0;
      j = 0;
      for (Request r : heldOut) {
        for (long seed : seeds) {
          student +=
              meanSquared(
                      sample(engine, steps(r, STUDENT_STEPS, 1.0), seed, BehaviorCapture.FINAL),
                      references[j++])
                  / n;
        }
      }
      System.out.printf(
          "distillation: segment loss %.5f -> %.5f; mean squared distance to the teacher's"
              + " %d-step guided samples: teacher 4 steps guided %.5f, unguided %.5f;"
              + " student 4 steps unguided %.5f%n",
          first, last, TEACHER_STEPS, teacherFourCfg, teacherFour, student);
      assertTrue(last < first / 2, "the segment loss fell: " + first + " -> " + last);
      double baseline = Math.min(teacherFourCfg, teacherFour);
      assertTrue(
          student < baseline / 2,
          "student " + student + " against the teacher's best 4-step " + baseline);

      // The student as a card of its own, served from its folder: its defaults and the engine's
      // samples of the in-memory student agree bit for bit, and its recipe has teeth.
      Path card =
          DistilledCard.write(
              TINY,
              tmp.resolve("student"),
              "tiny-student",
              distill.weights(),
              STUDENT_STEPS,
              distill.provenance(),
              null);
      Request fourUnguided = steps(heldOut.getFirst(), STUDENT_STEPS, 1.0);
      Request byDefault =
          fourUnguided.withParams(
              fourUnguided.params().withSampling(STUDENT_STEPS, 1.0, Optional.empty()));
      try (WanModel served = WanModel.load(card, new CpuBackend());
          Engine fromCard =
              new Engine(
                  served,
                  dev.stepweave.core.runtime.EngineConfig.defaults(),
                  Extensions.builder().enable(StepCachePlugin.STEPCACHE).build())) {
        assertEquals("distill", served.card().recipe().method());
        assertEquals(STUDENT_STEPS, served.card().defaults().steps());
        BehaviorRecord fromFolder =
            GroupRollout.run(fromCard, byDefault, 1, 9001, BehaviorCapture.TRAJECTORY, TIMEOUT)
                .getFirst()
                .behavior();
        assertArrayEquals(schedule.sigmas(), fromFolder.sigmas(), "the schedule it learned");
        assertArrayEquals(
            sample(engine, fourUnguided, 9001, BehaviorCapture.FINAL),
            fromFolder.finalLatents().toFloatArray(),
            "the card serves the student that was trained");
        RecipeRefusedException refused =
            assertThrows(
                RecipeRefusedException.class,
                () -> fromCard.submit(steps(fourUnguided, 50, GUIDANCE)));
        assertTrue(
            refused.getMessage().contains("steps 50 (recipe assumes 4)")
                && refused.getMessage().contains("guidance 5.0 (recipe assumes 1.0)"),
            refused.getMessage());
        InvalidRequestException cached =
            assertThrows(
                InvalidRequestException.class,
                () ->
                    fromCard.submit(
                        fourUnguided.toBuilder()
                            .plugins(Map.of(StepCachePlugin.STEPCACHE.id(), Map.of()))
                            .build()));
        assertTrue(cached.getMessage().contains("refuses plugin 'stepcache'"), cached.getMessage());
      }
    }
  }

  static FewStepDistillation.Settings settings() {
    return new FewStepDistillation.Settings(
        STUDENT_STEPS,
        TEACHER_STEPS,
        GUIDANCE,
        8,
        new Optimiser.Settings(
            new LearningRate.Constant(3e-3), AdamW.Settings.torchDefaults(), 1.0, Double.NaN),
        TIMEOUT);
  }

  private static Request steps(Request r, int steps, double guidance) {
    return r.withParams(r.params().withSampling(steps, guidance, r.params().sampler()));
  }
}

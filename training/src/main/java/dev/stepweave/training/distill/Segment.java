package dev.stepweave.training.distill;

import dev.stepweave.core.request.BehaviorRecord;
import dev.stepweave.models.sampling.SamplerSchedule;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;

/**
 * One step a few-step student must take as its teacher would have: from the teacher's latents at
 * the student's noise level σₖ, the velocity that carries them to the teacher's latents at σₖ₊₁ in
 * one Euler step — the average velocity of the teacher's path over the segment. A student whose
 * prediction at {@code (start, timestep, context)} is {@code velocity} retraces the teacher's
 * endpoint with one step where the teacher took many (and, without CFG, one forward where the
 * teacher took two each).
 *
 * @param start the teacher's latents at σₖ
 * @param timestep the student's timestep at step k, {@code [1]}
 * @param context the prompt's text embeddings
 * @param velocity {@code (x(σₖ₊₁) − x(σₖ)) / (σₖ₊₁ − σₖ)}
 */
public record Segment(Tensor start, Tensor timestep, Tensor context, Tensor velocity) {
  /** The segments of a {@code student.steps()}-step student on one teacher trajectory. */
  public static List<Segment> of(BehaviorRecord teacher, SamplerSchedule student) {
    TeacherPath path = new TeacherPath(teacher);
    Tensor context = teacher.conditioning().get(BehaviorRecord.PROMPT_EMBEDS);
    List<Segment> out = new ArrayList<>();
    // Each level's point once: a segment's end is the next one's start.
    Tensor start = path.at(student.sigma(0));
    for (int k = 0; k < student.steps(); k++) {
      float from = student.sigma(k);
      float to = student.sigma(k + 1);
      Tensor end = path.at(to);
      float[] a = start.toFloatArray();
      float[] b = end.toFloatArray();
      float[] v = new float[a.length];
      for (int e = 0; e < a.length; e++) {
        v[e] = (b[e] - a[e]) / (to - from);
      }
      out.add(
          new Segment(
              start,
              Tensor.of(new float[] {student.timestep(k)}, 1),
              context,
              Tensor.of(v, start.shape())));
      start = end;
    }
    return out;
  }
}

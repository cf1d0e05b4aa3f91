package dev.stepweave.training.run;

import dev.stepweave.models.wan.transformer.AdapterRows;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.training.distill.Segment;
import dev.stepweave.training.objective.FlowMatching;
import dev.stepweave.training.optim.Optimiser;
import dev.stepweave.training.wan.TrainableTransformer;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * The student transformer of a distillation: every parameter, each sample a {@link Segment} of the
 * teacher's path, the loss the mean squared error between the student's prediction at the segment's
 * start and the segment's velocity (one micro-batch in one forward).
 */
final class DistillationComponent implements TrainedComponent {
  private final TrainableTransformer student;
  private final List<Segment> segments;

  DistillationComponent(TrainableTransformer student, TrainingData.Segments data) {
    this.student = student;
    this.segments = data.segments();
  }

  @Override
  public Map<String, Tensor> trainable() {
    return student.parameters();
  }

  @Override
  public Backend backend() {
    return student.backend();
  }

  @Override
  public Optimiser.Evaluation evaluate(List<Integer> samples, StepDraws draws, double share) {
    List<Segment> batch = samples.stream().map(segments::get).toList();
    Tensor start = stack(batch.stream().map(Segment::start).toList());
    Tensor timestep = stack(batch.stream().map(Segment::timestep).toList());
    Tensor context = stack(batch.stream().map(Segment::context).toList());
    Tensor velocity = stack(batch.stream().map(Segment::velocity).toList());
    var e =
        student.lossAndGradientsAt(
            start,
            timestep,
            context,
            trainable(),
            AdapterRows.NONE,
            v -> FlowMatching.meanSquaredError(student.backend(), v, velocity));
    return new Optimiser.Evaluation(share, e.loss(), e.gradients());
  }

  @Override
  public void stepped() {}

  /** Host tensors of one shape {@code [1, …]} (or {@code [1]}) stacked along their first axis. */
  private static Tensor stack(List<Tensor> rows) {
    int[] shape = rows.getFirst().shape().clone();
    int size = Math.toIntExact(Tensor.numel(shape));
    float[] all = new float[rows.size() * size];
    for (int r = 0; r < rows.size(); r++) {
      if (!Arrays.equals(shape, rows.get(r).shape())) {
        throw new IllegalArgumentException(
            "segment shapes differ: " + Arrays.toString(rows.get(r).shape()));
      }
      System.arraycopy(rows.get(r).toFloatArray(), 0, all, r * size, size);
    }
    shape[0] *= rows.size();
    return Tensor.of(all, shape);
  }
}

package dev.stepweave.training.run;

import dev.stepweave.models.wan.transformer.AdapterRows;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.training.data.LatentSample;
import dev.stepweave.training.objective.FlowMatching;
import dev.stepweave.training.optim.Optimiser;
import dev.stepweave.training.wan.TrainableLora;
import dev.stepweave.training.wan.TrainableTransformer;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

/**
 * The transformer under the flow-matching objective: each sample noised at its own σ ({@link
 * NoiseLevels}: uniform, shifted as the scheduler's flow shift does, within the run's range), its
 * caption replaced by the empty prompt with the dropout probability (so guidance's unconditional
 * branch learns too). Trains every parameter, or a LoRA's factors only.
 */
final class FlowMatchingComponent implements TrainedComponent {
  private TrainableTransformer model;
  private final TrainableLora lora;
  private final TrainingData.Latents data;
  private final NoiseLevels noiseLevels;
  private final double captionDropout;

  /**
   * @param lora the adapter whose factors train, or null for a full fine-tune
   */
  FlowMatchingComponent(
      TrainableTransformer model,
      TrainableLora lora,
      TrainingData.Latents data,
      NoiseLevels noiseLevels,
      double captionDropout) {
    this.model = model;
    this.lora = lora;
    this.data = data;
    this.noiseLevels = noiseLevels;
    this.captionDropout = captionDropout;
  }

  @Override
  public Map<String, Tensor> trainable() {
    return lora == null ? model.parameters() : lora.parameters();
  }

  @Override
  public Optimiser.Evaluation evaluate(List<Integer> samples, StepDraws draws, double share) {
    FlowMatching.Batch batch = batch(data, samples, draws, noiseLevels, captionDropout);
    int n = samples.size();
    AdapterRows adapters = lora == null ? AdapterRows.NONE : lora.rows(n);
    var result =
        model.lossAndGradients(batch, lora == null ? trainable() : lora.factors(), adapters);
    return new Optimiser.Evaluation(share, result.loss(), result.gradients());
  }

  /**
   * The batch of {@code samples}: per row, in this order from {@code draws}, a noise level (a
   * uniform through {@code noiseLevels}), whether the caption drops (a uniform below {@code
   * captionDropout}: the negative prompt's embedding instead), and the noise.
   */
  static FlowMatching.Batch batch(
      TrainingData.Latents data,
      List<Integer> samples,
      StepDraws draws,
      NoiseLevels noiseLevels,
      double captionDropout) {
    int n = samples.size();
    int[] latentShape = data.samples().getFirst().latents().shape();
    int[] textShape = data.negative().shape();
    int latentSize = Math.toIntExact(Tensor.numel(latentShape));
    int textSize = Math.toIntExact(Tensor.numel(textShape));
    float[] x0 = new float[n * latentSize];
    float[] noise = new float[n * latentSize];
    float[] sigma = new float[n];
    float[] context = new float[n * textSize];
    float[] negative = data.negative().toFloatArray();
    // Each row's draws (its noise level, its caption dropout, its noise) follow the previous
    // row's in one stream; the rows are drawn in parallel, each from its place in the stream, with
    // the bits of drawing them in order (a batch of 256 is 4.7 M gaussians of StrictMath a step).
    long perRow = 2 + StepDraws.drawsOf(latentSize);
    IntStream.range(0, n)
        .parallel()
        .forEach(
            row -> {
              StepDraws mine = draws.ahead(row * perRow);
              LatentSample s = data.samples().get(samples.get(row));
              sigma[row] = (float) noiseLevels.sigma(mine.uniform());
              boolean dropped = mine.uniform() < captionDropout;
              System.arraycopy(s.latents().toFloatArray(), 0, x0, row * latentSize, latentSize);
              System.arraycopy(mine.gaussians(latentSize), 0, noise, row * latentSize, latentSize);
              float[] text = dropped ? negative : s.promptEmbeds().toFloatArray();
              System.arraycopy(text, 0, context, row * textSize, textSize);
            });
    draws.skip(n * perRow);
    return new FlowMatching.Batch(
        Tensor.of(x0, prepend(n, latentShape)),
        Tensor.of(noise, prepend(n, latentShape)),
        Tensor.of(sigma, n),
        Tensor.of(context, prepend(n, textShape)));
  }

  @Override
  public Backend backend() {
    return model.backend();
  }

  /**
   * The optimiser updated the parameters in place: a model that derived tensors from them at load
   * loads again; on a device a LoRA's F32 masters go into the adapter's factors.
   */
  @Override
  public void stepped() {
    if (lora == null) {
      model = model.reloaded();
    } else {
      lora.pushed();
    }
  }

  static int[] prepend(int n, int[] shape) {
    int[] out = new int[shape.length + 1];
    out[0] = n;
    System.arraycopy(shape, 0, out, 1, shape.length);
    return out;
  }
}

package dev.stepweave.training.run;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.training.data.RgbClip;
import dev.stepweave.training.optim.Optimiser;
import dev.stepweave.training.wan.TrainableVae;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The VAE under the reconstruction objective, every parameter the loss reaches trained (the
 * encoder's log-variance half is not: the loss decodes the posterior's mean). The VAE derives
 * tensors from its parameters at load (a norm's {@code γ·√C}), so after each optimiser step it is
 * loaded again from the updated parameters, and those derivations follow.
 */
final class ReconstructionComponent implements TrainedComponent {
  private TrainableVae vae;
  private final TrainingData.Clips data;
  private final Set<String> trained;

  /**
   * @param trained the names of the parameters that train
   */
  ReconstructionComponent(TrainableVae vae, TrainingData.Clips data, Set<String> trained) {
    this.vae = vae;
    this.data = data;
    // Sorted, so gradients are summed in the same order in every JVM (a resume is bit-exact).
    this.trained = java.util.Collections.unmodifiableSortedSet(new java.util.TreeSet<>(trained));
  }

  /**
   * The parameters the reconstruction loss reaches, found by one evaluation on an 8×8 corner of the
   * first clip: which parameters a loss reaches depends on the frame count (the causal temporal
   * convolutions skip a first chunk), not on the frame size.
   */
  static Set<String> reached(TrainableVae vae, TrainingData.Clips data) {
    Tensor clip = data.clips().getFirst().toVaeInput();
    int spatial = Math.min(8, Math.min(clip.dim(3), clip.dim(4)));
    Tensor corner = clip.slice(3, 0, spatial).slice(4, 0, spatial).toHost(DType.F32);
    return vae.reconstructionStep(corner).gradients().keySet();
  }

  @Override
  public Map<String, Tensor> trainable() {
    Map<String, Tensor> out = new LinkedHashMap<>();
    vae.parameters()
        .forEach(
            (name, t) -> {
              if (trained.contains(name)) {
                out.put(name, t);
              }
            });
    return out;
  }

  @Override
  public Optimiser.Evaluation evaluate(List<Integer> samples, StepDraws draws, double share) {
    RgbClip first = data.clips().get(samples.getFirst());
    int[] shape = first.toVaeInput().shape();
    int size = Math.toIntExact(Tensor.numel(shape));
    float[] video = new float[samples.size() * size];
    for (int row = 0; row < samples.size(); row++) {
      float[] clip = data.clips().get(samples.get(row)).toVaeInput().toFloatArray();
      System.arraycopy(clip, 0, video, row * size, size);
    }
    shape[0] = samples.size();
    var result = vae.reconstructionStep(Tensor.of(video, shape));
    Map<String, Tensor> gradients = new LinkedHashMap<>();
    for (String name : trained) {
      Tensor g = result.gradients().get(name);
      if (g == null) {
        throw new IllegalStateException("no gradient reached VAE parameter '" + name + "'");
      }
      gradients.put(name, g);
    }
    return new Optimiser.Evaluation(share, result.loss(), gradients);
  }

  @Override
  public Backend backend() {
    return vae.backend();
  }

  @Override
  public void stepped() {
    vae = vae.reloaded();
  }
}

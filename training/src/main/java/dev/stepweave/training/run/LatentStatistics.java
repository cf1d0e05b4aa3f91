package dev.stepweave.training.run;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.models.wan.vae.WanVae;
import dev.stepweave.models.wan.vae.WanVaeConfig;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.InMemoryTensors;
import dev.stepweave.tensor.io.Weights;
import dev.stepweave.training.data.RgbClip;
import java.util.List;
import java.util.Map;

/**
 * A VAE's latent statistics, {@code latents_mean} and {@code latents_std} of its config: the
 * per-channel mean and standard deviation of the posterior means of clips, which {@link
 * WanVae#normalize} removes so the transformer sees latents of unit scale. A VAE trained from fresh
 * weights has its own latent scale, so its run measures them over its training clips.
 */
final class LatentStatistics {
  /** At most this many clips are encoded for the measurement (a run may have thousands). */
  static final int MAX_CLIPS = 256;

  private LatentStatistics() {}

  /**
   * Measures the statistics of the VAE of {@code config} with {@code weights} over the first
   * {@value #MAX_CLIPS} of {@code clips}, and returns {@code config} with them.
   */
  static ObjectNode measured(ObjectNode config, Map<String, Tensor> weights, List<RgbClip> clips) {
    CpuBackend cpu = new CpuBackend();
    WanVae vae =
        WanVae.load(
            WanVaeConfig.fromJson(config),
            new Weights(new InMemoryTensors(weights, "(the trained VAE)"), cpu, DType.F32));
    double[] sum = null;
    double[] squares = null;
    long perChannel = 0;
    for (RgbClip clip : clips.subList(0, Math.min(MAX_CLIPS, clips.size()))) {
      Tensor mean = vae.encode(cpu.upload(clip.toVaeInput(), DType.F32)).mean().toHost(DType.F32);
      int channels = mean.dim(1);
      int plane = Math.toIntExact(mean.numel() / channels);
      float[] v = mean.toFloatArray();
      if (sum == null) {
        sum = new double[channels];
        squares = new double[channels];
      }
      for (int c = 0; c < channels; c++) {
        for (int i = 0; i < plane; i++) {
          double x = v[c * plane + i];
          sum[c] += x;
          squares[c] += x * x;
        }
      }
      perChannel += plane;
    }
    ObjectNode out = config.deepCopy();
    ArrayNode means = out.putArray("latents_mean");
    ArrayNode stds = out.putArray("latents_std");
    for (int c = 0; c < sum.length; c++) {
      double m = sum[c] / perChannel;
      double variance = Math.max(0, squares[c] / perChannel - m * m);
      means.add(m);
      // A channel the clips never move would divide by zero; it keeps unit scale.
      stds.add(variance > 0 ? Math.sqrt(variance) : 1.0);
    }
    return out;
  }

  /**
   * {@code config} with {@code latents_mean} zeros and {@code latents_std} ones when their length
   * is not {@code z_dim} (a fresh VAE of another latent width, before its run measures them).
   */
  static ObjectNode sized(ObjectNode config) {
    int z = config.get("z_dim").intValue();
    if (config.path("latents_mean").size() == z && config.path("latents_std").size() == z) {
      return config;
    }
    ObjectNode out = config.deepCopy();
    ArrayNode means = out.putArray("latents_mean");
    ArrayNode stds = out.putArray("latents_std");
    for (int c = 0; c < z; c++) {
      means.add(0.0);
      stds.add(1.0);
    }
    return out;
  }
}

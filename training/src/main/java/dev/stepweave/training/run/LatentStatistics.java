package dev.stepweave.training.run;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.models.wan.vae.WanVae;
import dev.stepweave.models.wan.vae.WanVaeConfig;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.tensor.io.Weights;
import dev.stepweave.training.data.RgbClip;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;

/**
 * The latent normalisation a VAE trained from fresh weights defines: per latent channel, the mean
 * and standard deviation of its posterior means over the run's first clips, written as its config's
 * {@code latents_mean} and {@code latents_std}. Serving and {@code prepare} normalise latents with
 * them (as Wan's published statistics do for Wan's own VAE), so a DiT trained on this VAE sees
 * latents of unit scale, whatever scale the reconstruction objective happened to give.
 */
final class LatentStatistics {
  /** Clips measured: enough for stable per-channel moments, few enough to take seconds. */
  static final int CLIPS = 128;

  private static final ObjectMapper JSON =
      new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  private LatentStatistics() {}

  /** Measures the VAE of checkpoint {@code modelDir} on {@code clips} and rewrites its config. */
  static void writeInto(Path modelDir, List<RgbClip> clips) throws IOException {
    DiffusersDirectory.Component vaeDir = DiffusersDirectory.open(modelDir).component("vae");
    ObjectNode config = vaeDir.config().deepCopy();
    WanVaeConfig cfg = WanVaeConfig.fromJson(config);
    int z = cfg.zDim();
    double[] sum = new double[z];
    double[] squares = new double[z];
    long perChannel = 0;
    try (TensorSource source = vaeDir.openWeights()) {
      WanVae vae = WanVae.load(cfg, new Weights(source, new CpuBackend(), DType.F32));
      for (RgbClip clip : clips.subList(0, Math.min(CLIPS, clips.size()))) {
        float[] mean = vae.encode(clip.toVaeInput()).mean().toFloatArray(); // [1, z, F', H', W']
        int volume = mean.length / z;
        for (int c = 0; c < z; c++) {
          for (int i = 0; i < volume; i++) {
            double v = mean[c * volume + i];
            sum[c] += v;
            squares[c] += v * v;
          }
        }
        perChannel += volume;
      }
    }
    ArrayNode means = config.arrayNode();
    ArrayNode stds = config.arrayNode();
    for (int c = 0; c < z; c++) {
      double m = sum[c] / perChannel;
      means.add(m);
      stds.add(Math.sqrt(Math.max(squares[c] / perChannel - m * m, 1e-12)));
    }
    config.set("latents_mean", means);
    config.set("latents_std", stds);
    Path file = vaeDir.dir().resolve("config.json");
    Path partial = file.resolveSibling("config.json.partial");
    Files.writeString(partial, JSON.writeValueAsString(config) + "\n", StandardCharsets.UTF_8);
    Files.move(partial, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }
}

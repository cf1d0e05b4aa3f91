package dev.stepweave.training.run;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.stepweave.models.wan.embedded.EmbeddedWan;
import dev.stepweave.models.wan.vae.WanVae;
import dev.stepweave.models.wan.vae.WanVaeConfig;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.tensor.io.Weights;
import dev.stepweave.training.data.RgbClip;
import dev.stepweave.training.shapes.ShapesDataset;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The statistics a VAE trained from fresh weights gets: after {@code writeInto}, the serving VAE's
 * own {@code normalize} maps the posterior means of the measured clips to mean 0 and standard
 * deviation 1 in every latent channel.
 */
class LatentStatisticsTest {
  @TempDir Path tmp;

  @Test
  void theServingNormalisationOfTheMeasuredClipsIsStandard() throws Exception {
    Path dir = tmp.resolve("model");
    copy(EmbeddedWan.ensure(tmp.resolve("cache")), dir);
    ShapesDataset shapes = new ShapesDataset(3, 64, 64, 5);
    List<RgbClip> clips = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      clips.add(shapes.sample(i).clip());
    }

    LatentStatistics.writeInto(dir, clips);

    DiffusersDirectory.Component c = DiffusersDirectory.open(dir).component("vae");
    WanVaeConfig cfg = WanVaeConfig.fromJson(c.config());
    int z = cfg.zDim();
    double[] sum = new double[z];
    double[] squares = new double[z];
    long count = 0;
    try (TensorSource source = c.openWeights()) {
      WanVae vae = WanVae.load(cfg, new Weights(source, new CpuBackend(), DType.F32));
      for (RgbClip clip : clips) {
        float[] v = vae.normalize(vae.encode(clip.toVaeInput()).mean()).toFloatArray();
        int volume = v.length / z;
        for (int ch = 0; ch < z; ch++) {
          for (int i = 0; i < volume; i++) {
            sum[ch] += v[ch * volume + i];
            squares[ch] += (double) v[ch * volume + i] * v[ch * volume + i];
          }
        }
        count += volume;
      }
    }
    for (int ch = 0; ch < z; ch++) {
      double mean = sum[ch] / count;
      double std = Math.sqrt(squares[ch] / count - mean * mean);
      assertEquals(0, mean, 1e-4, "channel " + ch + " mean");
      assertEquals(1, std, 1e-4, "channel " + ch + " std");
    }
  }

  private static void copy(Path from, Path to) throws Exception {
    try (Stream<Path> all = Files.walk(from)) {
      for (Path p : all.toList()) {
        Path target = to.resolve(from.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(target);
        } else {
          Files.copy(p, target);
        }
      }
    }
  }
}

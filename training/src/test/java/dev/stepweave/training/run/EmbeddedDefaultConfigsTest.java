package dev.stepweave.training.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The committed configs of the embedded default read strictly and fit together: the VAE on stills
 * from fresh weights, per frame (no temporal compression, causal taps on earlier frames at zero, so
 * each frame of a clip encodes as its still), measuring the latent normalisation; the DiT the
 * default ships fresh from its init with the VAE's latent channels, starting from the embedded
 * checkpoint (which carries that VAE once shipped; training/configs/ship-embedded-default.sh); the
 * CPU DiT config of the earlier default from the VAE run's output.
 */
class EmbeddedDefaultConfigsTest {
  private static final Path CONFIGS =
      Path.of(System.getProperty("stepweave.golden"))
          .getParent()
          .getParent()
          .resolve("training/configs");

  @TempDir Path tmp;

  @Test
  void theDitTrainsOnTheVaeRunsOutput() throws Exception {
    // Both read from a copy of the repository's layout, where the VAE run's output exists: the
    // DiT config's base must be a directory.
    Path configs = Files.createDirectories(tmp.resolve("training/configs"));
    for (String name : new String[] {"embedded-vae-stills.yaml", "embedded-dit.yaml"}) {
      Files.copy(CONFIGS.resolve(name), configs.resolve(name));
    }
    TrainConfig vae = TrainConfigReader.read(configs.resolve("embedded-vae-stills.yaml"));
    Files.createDirectories(vae.output().resolve(TrainedOutputs.MODEL));
    TrainConfig dit = TrainConfigReader.read(configs.resolve("embedded-dit.yaml"));

    assertEquals(TrainConfig.Component.VAE, vae.component());
    assertEquals(1, ((TrainConfig.Data.Shapes) vae.data()).dataset().frames());
    assertTrue(vae.init().pastFramesZero());
    assertEquals(1, vae.init().config().get("scale_factor_temporal").intValue());
    assertTrue(vae.measureLatentStatistics());
    assertEquals(TrainConfig.Component.TRANSFORMER, dit.component());
    assertEquals(vae.output().resolve(TrainedOutputs.MODEL).normalize(), dit.base().normalize());
    int z = vae.init().config().get("z_dim").intValue();
    assertEquals(z, dit.init().config().get("in_channels").intValue());
    assertEquals(z, dit.init().config().get("out_channels").intValue());
    assertEquals(9, ((TrainConfig.Data.Shapes) dit.data()).dataset().frames());

    TrainConfig shipped = TrainConfigReader.read(CONFIGS.resolve("embedded-dit-gpu-big6.yaml"));
    assertEquals(TrainConfig.Component.TRANSFORMER, shipped.component());
    assertNull(shipped.base()); // the embedded checkpoint
    assertEquals(z, shipped.init().config().get("in_channels").intValue());
    assertEquals(z, shipped.init().config().get("out_channels").intValue());
    assertEquals(9, ((TrainConfig.Data.Shapes) shipped.data()).dataset().frames());
  }

  /** Every committed config reads (the ones run on the GPU machine first met only there). */
  @Test
  void everyCommittedConfigReads() throws Exception {
    Path configs = Files.createDirectories(tmp.resolve("training/configs"));
    List<Path> yaml;
    try (Stream<Path> files = Files.list(CONFIGS)) {
      yaml = files.filter(f -> f.toString().endsWith(".yaml")).sorted().toList();
    }
    for (Path f : yaml) {
      Files.copy(f, configs.resolve(f.getFileName()));
    }
    // The bases some name: the golden checkpoints, and the VAE run's output.
    Files.createSymbolicLink(
        tmp.resolve("testdata"), CONFIGS.getParent().getParent().resolve("testdata"));
    TrainConfig vae = TrainConfigReader.read(configs.resolve("embedded-vae-stills.yaml"));
    Files.createDirectories(vae.output().resolve(TrainedOutputs.MODEL));
    assertTrue(yaml.size() >= 6, "configs found: " + yaml);
    for (Path f : yaml) {
      TrainConfig config = TrainConfigReader.read(configs.resolve(f.getFileName()));
      assertTrue(config.steps() > 0, f + " trains");
    }
    TrainConfig bf16 = TrainConfigReader.read(configs.resolve("embedded-dit-gpu-bf16.yaml"));
    assertEquals(256, bf16.batch());
  }
}

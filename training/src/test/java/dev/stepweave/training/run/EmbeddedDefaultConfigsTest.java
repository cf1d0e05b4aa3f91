package dev.stepweave.training.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The committed configs of the embedded default read strictly, and the second trains on the first's
 * output: the DiT's base is the VAE run's checkpoint and its latent channels are the VAE's.
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
    for (String name : new String[] {"embedded-vae.yaml", "embedded-dit.yaml"}) {
      Files.copy(CONFIGS.resolve(name), configs.resolve(name));
    }
    TrainConfig vae = TrainConfigReader.read(configs.resolve("embedded-vae.yaml"));
    Files.createDirectories(vae.output().resolve(TrainedOutputs.MODEL));
    TrainConfig dit = TrainConfigReader.read(configs.resolve("embedded-dit.yaml"));

    assertEquals(TrainConfig.Component.VAE, vae.component());
    assertEquals(TrainConfig.Component.TRANSFORMER, dit.component());
    assertEquals(vae.output().resolve(TrainedOutputs.MODEL).normalize(), dit.base().normalize());
    int z = vae.init().config().get("z_dim").intValue();
    assertEquals(z, dit.init().config().get("in_channels").intValue());
    assertEquals(z, dit.init().config().get("out_channels").intValue());
    assertInstanceOf(TrainConfig.Data.Shapes.class, vae.data());
    assertInstanceOf(TrainConfig.Data.Shapes.class, dit.data());
  }
}

package dev.stepweave.models.sampling;

import java.nio.file.Path;

/** Builds the {@link Sampler} a diffusers scheduler config names. */
public final class Samplers {
  private Samplers() {}

  public static Sampler fromConfig(Path schedulerConfigJson) {
    return fromConfig(SchedulerConfig.read(schedulerConfigJson));
  }

  /**
   * @throws IllegalArgumentException for a scheduler class or setting not implemented here
   */
  public static Sampler fromConfig(SchedulerConfig config) {
    return switch (config.className()) {
      case FlowUniPCMultistep.DIFFUSERS_CLASS -> FlowUniPCMultistep.fromConfig(config);
      case FlowMatchEuler.DIFFUSERS_CLASS -> FlowMatchEuler.fromConfig(config);
      case FlowSde.CONFIG_CLASS -> FlowSde.fromConfig(config);
      default ->
          throw new IllegalArgumentException(
              config
                  + ": unsupported scheduler class '"
                  + config.className()
                  + "' (supported: "
                  + FlowUniPCMultistep.DIFFUSERS_CLASS
                  + ", "
                  + FlowMatchEuler.DIFFUSERS_CLASS
                  + ", "
                  + FlowSde.CONFIG_CLASS
                  + ")");
    };
  }
}

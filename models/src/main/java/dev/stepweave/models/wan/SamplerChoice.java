package dev.stepweave.models.wan;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.models.sampling.FlowMatchEuler;
import dev.stepweave.models.sampling.FlowSde;
import dev.stepweave.models.sampling.FlowUniPCMultistep;
import dev.stepweave.models.sampling.Sampler;
import dev.stepweave.models.sampling.Samplers;
import dev.stepweave.models.sampling.SchedulerConfig;
import java.util.Optional;

/**
 * Which sampler a request runs: the checkpoint's own scheduler unless the request names another
 * ("unipc", "euler", "sde") or overrides the flow shift. A switched sampler keeps the checkpoint's
 * shift and training-timestep count, so only what the request asked for changes. "sde" is the
 * stochastic sampler RL rollouts take their per-step log-probabilities from ({@link FlowSde}).
 */
public final class SamplerChoice {
  public static final String UNIPC = "unipc";
  public static final String EULER = "euler";
  public static final String SDE = "sde";

  private static final ObjectMapper JSON = new ObjectMapper();

  private final JsonNode checkpointConfig;
  private final String source;

  /**
   * @param schedulerConfigJson the checkpoint's {@code scheduler_config.json} text
   * @param source its path, for error messages
   */
  public SamplerChoice(String schedulerConfigJson, String source) {
    this.source = source;
    try {
      this.checkpointConfig = JSON.readTree(schedulerConfigJson);
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException(source + ": invalid scheduler config: " + e.getMessage());
    }
    nameOf(className(checkpointConfig)); // rejects schedulers we cannot run, at load time
    Samplers.fromConfig(SchedulerConfig.parse(schedulerConfigJson, source));
  }

  /** The checkpoint's sampler by recipe name. */
  public String defaultName() {
    return nameOf(className(checkpointConfig));
  }

  /** Built samplers by the choices that made them: samplers hold configuration only. */
  private final java.util.Map<java.util.List<Object>, Sampler> built =
      new java.util.concurrent.ConcurrentHashMap<>();

  /**
   * The sampler for a request's choices, built once per distinct choice (the denoise loop asks for
   * it at every step).
   */
  public Sampler choose(Optional<String> sampler, Optional<Double> shift) {
    var key = java.util.List.<Object>of(sampler, shift);
    Sampler s = built.get(key);
    if (s == null) {
      s = build(sampler, shift);
      // Requests choose the shift freely: keep a bounded number of variants.
      if (built.size() < MAX_BUILT) {
        built.putIfAbsent(key, s);
      }
    }
    return s;
  }

  private static final int MAX_BUILT = 64;

  private Sampler build(Optional<String> sampler, Optional<Double> shift) {
    String name = sampler.orElse(defaultName());
    ObjectNode config;
    if (name.equals(defaultName())) {
      config = checkpointConfig.deepCopy();
    } else {
      config = JSON.createObjectNode();
      config.put("num_train_timesteps", checkpointConfig.path("num_train_timesteps").asInt(1000));
      if (name.equals(UNIPC)) {
        config.put("_class_name", FlowUniPCMultistep.DIFFUSERS_CLASS);
        config.put("prediction_type", "flow_prediction");
        config.put("use_flow_sigmas", true);
        config.put("solver_order", 2);
        config.put("solver_type", "bh2");
        config.put("lower_order_final", true);
        config.put("final_sigmas_type", "zero");
      } else if (name.equals(SDE)) {
        config.put("_class_name", FlowSde.CONFIG_CLASS);
        config.put("noise_level", FlowSde.DEFAULT_NOISE_LEVEL);
      } else {
        config.put("_class_name", FlowMatchEuler.DIFFUSERS_CLASS);
      }
      config.put(shiftKey(name), checkpointShift());
    }
    shift.ifPresent(s -> config.put(shiftKey(name), s));
    return Samplers.fromConfig(SchedulerConfig.parse(config.toString(), source));
  }

  /** The scheduler's {@code num_train_timesteps} (1000 when the config gives none). */
  public int trainTimesteps() {
    JsonNode v = checkpointConfig.get("num_train_timesteps");
    return v == null || !v.canConvertToInt() ? 1000 : v.intValue();
  }

  /** The flow shift a request runs with: its own, else the checkpoint's. */
  public double shift(Optional<Double> requested) {
    return requested.orElseGet(this::checkpointShift);
  }

  private double checkpointShift() {
    JsonNode v = checkpointConfig.get(shiftKey(defaultName()));
    return v == null || v.isNull() ? 1.0 : v.asDouble();
  }

  private static String shiftKey(String samplerName) {
    return samplerName.equals(UNIPC) ? "flow_shift" : "shift";
  }

  private static String className(JsonNode config) {
    return config.path("_class_name").asText("");
  }

  private String nameOf(String className) {
    return switch (className) {
      case FlowUniPCMultistep.DIFFUSERS_CLASS -> UNIPC;
      case FlowMatchEuler.DIFFUSERS_CLASS -> EULER;
      default ->
          throw new IllegalArgumentException(
              source
                  + ": unsupported scheduler class '"
                  + className
                  + "' (supported: UniPC, FlowMatch Euler)");
    };
  }
}

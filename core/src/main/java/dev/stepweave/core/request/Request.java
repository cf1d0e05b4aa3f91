package dev.stepweave.core.request;

import dev.stepweave.core.card.TaskType;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/**
 * One generation job: the only currency that crosses the product boundary. The task is declared,
 * never inferred from the inputs.
 *
 * @param id unique request id
 * @param task what to do
 * @param inputs typed inputs (the prompt first)
 * @param params diffusion settings
 * @param output what to return besides the main artifact
 * @param nodeOverrides per-loop settings keyed by loop id (e.g. {"vae_decode": {"tile": "256"}})
 * @param overrideRecipe run settings the card's recipe does not allow; recorded on the artifact
 * @param plugins parameters of deployment-enabled plugins this request turns on, by plugin id (e.g.
 *     {"dbcache": {"threshold": "0.08"}}); validated against each plugin's schema
 * @param exact whether the output must be the model's own: refuses distribution-altering plugins
 * @param adapters the deployment's adapters this request stacks, in order, each with its strength
 */
public record Request(
    String id,
    TaskType task,
    List<ModalPart> inputs,
    DiffusionParams params,
    OutputSpec output,
    Map<String, Map<String, String>> nodeOverrides,
    boolean overrideRecipe,
    Map<String, Map<String, String>> plugins,
    boolean exact,
    List<AdapterUse> adapters) {

  public Request {
    Objects.requireNonNull(id, "request id");
    Objects.requireNonNull(task, "task");
    inputs = List.copyOf(inputs);
    Objects.requireNonNull(params, "params");
    output = output == null ? OutputSpec.DEFAULT : output;
    nodeOverrides = nodeOverrides == null ? Map.of() : Map.copyOf(nodeOverrides);
    plugins = plugins == null ? Map.of() : Map.copyOf(plugins);
    adapters = adapters == null ? List.of() : List.copyOf(adapters);
  }

  /** A text-to-video (or, with one frame and {@link TaskType#T2I}, text-to-image) request. */
  public static Request text(TaskType task, String prompt, DiffusionParams params) {
    return builder(task, params).prompt(prompt).build();
  }

  /**
   * Starts a request for {@code task} with {@code params}: a random id, no inputs, the default
   * output, no overrides or plugins, the recipe enforced, not exact.
   */
  public static Builder builder(TaskType task, DiffusionParams params) {
    return new Builder(task, params);
  }

  /** A builder holding this request's fields, to derive a request that differs in a few. */
  public Builder toBuilder() {
    return new Builder(task, params)
        .id(id)
        .inputs(inputs)
        .output(output)
        .nodeOverrides(nodeOverrides)
        .overrideRecipe(overrideRecipe)
        .plugins(plugins)
        .exact(exact)
        .adapters(adapters);
  }

  /** This request with other generation settings, everything else as it is. */
  public Request withParams(DiffusionParams p) {
    return new Request(
        id, task, inputs, p, output, nodeOverrides, overrideRecipe, plugins, exact, adapters);
  }

  /** The prompt (the first text input). */
  public String prompt() {
    return inputs.stream()
        .filter(ModalPart.Text.class::isInstance)
        .map(p -> ((ModalPart.Text) p).text())
        .findFirst()
        .orElse("");
  }

  /** The overrides for one loop (empty when none). */
  public Map<String, String> overridesFor(String loopId) {
    return nodeOverrides.getOrDefault(loopId, Map.of());
  }

  /**
   * Rejects requests no model can run.
   *
   * @throws InvalidRequestException naming the bad field
   */
  public Request validate() {
    if (prompt().isBlank()) {
      throw new InvalidRequestException("prompt is empty");
    }
    params.validate();
    if (task == TaskType.T2I && params.frames() != 1) {
      throw new InvalidRequestException(
          "a t2i request makes one frame, got frames=" + params.frames());
    }
    validateImages();
    validateAdapters();
    return this;
  }

  /** The images given. */
  public List<ModalPart.Image> images() {
    return inputs.stream()
        .filter(ModalPart.Image.class::isInstance)
        .map(ModalPart.Image.class::cast)
        .toList();
  }

  /** The one input image of an image-to-video request. */
  public ModalPart.Image image() {
    List<ModalPart.Image> given = images();
    if (given.size() != 1) {
      throw new InvalidRequestException(
          IMAGE, "a " + task.wireName() + " request has " + given.size() + " images, not one");
    }
    return given.getFirst();
  }

  /** The request field an input image travels in. */
  public static final String IMAGE = "image";

  /**
   * The task decides how many images a request carries: i2v exactly one (its first frame), ti2v at
   * most one, text-only tasks none (an image there would be ignored, silently).
   */
  private void validateImages() {
    int n = images().size();
    switch (task) {
      case I2V -> {
        if (n != 1) {
          throw new InvalidRequestException(
              IMAGE,
              n == 0
                  ? "an i2v request needs an input image (image / input_reference); none was given"
                  : "an i2v request takes one input image, got " + n);
        }
      }
      case TI2V -> {
        if (n > 1) {
          throw new InvalidRequestException(
              IMAGE, "a ti2v request takes at most one input image, got " + n);
        }
      }
      case T2V, T2I -> {
        if (n > 0) {
          throw new InvalidRequestException(
              IMAGE,
              "a "
                  + task.wireName()
                  + " request takes no input image (got "
                  + n
                  + "); image-to-video is task i2v");
        }
      }
    }
  }

  /** At most eight adapters, each named once, each at a finite strength within ±4. */
  private void validateAdapters() {
    if (adapters.size() > AdapterUse.MAX_PER_REQUEST) {
      throw new InvalidRequestException(
          "loras",
          "at most "
              + AdapterUse.MAX_PER_REQUEST
              + " adapters per request, got "
              + adapters.size());
    }
    java.util.Set<String> seen = new java.util.HashSet<>();
    for (int i = 0; i < adapters.size(); i++) {
      AdapterUse a = adapters.get(i);
      if (a.name().isBlank()) {
        throw new InvalidRequestException("loras[" + i + "].name", "adapter name is empty");
      }
      if (!seen.add(a.name())) {
        throw new InvalidRequestException(
            "loras[" + i + "].name", "adapter '" + a.name() + "' is named twice");
      }
      if (!(Math.abs(a.scale()) <= AdapterUse.MAX_SCALE)) {
        throw new InvalidRequestException(
            "loras[" + i + "].scale",
            "adapter '"
                + a.name()
                + "' scale must be a number in [-"
                + AdapterUse.MAX_SCALE
                + ", "
                + AdapterUse.MAX_SCALE
                + "], got "
                + a.scale());
      }
    }
  }

  /** Names every optional field at the call site, so no bare {@code true, false} reaches it. */
  public static final class Builder {
    private final TaskType task;
    private final DiffusionParams params;
    private String id = UUID.randomUUID().toString();
    private List<ModalPart> inputs = List.of();
    private OutputSpec output = OutputSpec.DEFAULT;
    private Map<String, Map<String, String>> nodeOverrides = Map.of();
    private boolean overrideRecipe;
    private Map<String, Map<String, String>> plugins = Map.of();
    private boolean exact;
    private List<AdapterUse> adapters = List.of();

    private Builder(TaskType task, DiffusionParams params) {
      this.task = task;
      this.params = params;
    }

    public Builder id(String requestId) {
      id = requestId;
      return this;
    }

    /** The inputs, the prompt first. */
    public Builder inputs(List<ModalPart> parts) {
      inputs = parts;
      return this;
    }

    /** A prompt as the only input. */
    public Builder prompt(String text) {
      return inputs(List.of(new ModalPart.Text(text)));
    }

    public Builder output(OutputSpec spec) {
      output = spec;
      return this;
    }

    public Builder nodeOverrides(Map<String, Map<String, String>> overrides) {
      nodeOverrides = overrides;
      return this;
    }

    public Builder overrideRecipe(boolean override) {
      overrideRecipe = override;
      return this;
    }

    public Builder plugins(Map<String, Map<String, String>> pluginParams) {
      plugins = pluginParams;
      return this;
    }

    public Builder exact(boolean isExact) {
      exact = isExact;
      return this;
    }

    /** The adapters to stack, in order, each with its strength. */
    public Builder adapters(List<AdapterUse> uses) {
      adapters = uses;
      return this;
    }

    public Request build() {
      return new Request(
          id,
          task,
          inputs,
          params,
          output,
          nodeOverrides,
          overrideRecipe,
          plugins,
          exact,
          adapters);
    }
  }
}

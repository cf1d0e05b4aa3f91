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
    boolean exact) {

  public Request {
    Objects.requireNonNull(id, "request id");
    Objects.requireNonNull(task, "task");
    inputs = List.copyOf(inputs);
    Objects.requireNonNull(params, "params");
    output = output == null ? OutputSpec.DEFAULT : output;
    nodeOverrides = nodeOverrides == null ? Map.of() : Map.copyOf(nodeOverrides);
    plugins = plugins == null ? Map.of() : Map.copyOf(plugins);
  }

  /** A request that turns on no plugins and is not exact. */
  public Request(
      String id,
      TaskType task,
      List<ModalPart> inputs,
      DiffusionParams params,
      OutputSpec output,
      Map<String, Map<String, String>> nodeOverrides,
      boolean overrideRecipe) {
    this(id, task, inputs, params, output, nodeOverrides, overrideRecipe, Map.of(), false);
  }

  /** A text-to-video (or, with one frame and {@link TaskType#T2I}, text-to-image) request. */
  public static Request text(TaskType task, String prompt, DiffusionParams params) {
    return new Request(
        UUID.randomUUID().toString(),
        task,
        List.of(new ModalPart.Text(prompt)),
        params,
        OutputSpec.DEFAULT,
        Map.of(),
        false);
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
    return this;
  }

  public Request withOutput(OutputSpec spec) {
    return new Request(
        id, task, inputs, params, spec, nodeOverrides, overrideRecipe, plugins, exact);
  }

  public Request withOverrideRecipe(boolean override) {
    return new Request(id, task, inputs, params, output, nodeOverrides, override, plugins, exact);
  }

  public Request withNodeOverrides(Map<String, Map<String, String>> overrides) {
    return new Request(id, task, inputs, params, output, overrides, overrideRecipe, plugins, exact);
  }

  public Request withPlugins(Map<String, Map<String, String>> pluginParams) {
    return new Request(
        id, task, inputs, params, output, nodeOverrides, overrideRecipe, pluginParams, exact);
  }

  public Request withExact(boolean isExact) {
    return new Request(
        id, task, inputs, params, output, nodeOverrides, overrideRecipe, plugins, isExact);
  }
}

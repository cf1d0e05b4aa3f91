package dev.stepweave.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.core.request.AppliedAdapter;
import dev.stepweave.core.request.Provenance;
import dev.stepweave.core.request.Request;
import java.util.TreeMap;

/**
 * The JSON document {@code generate} stores in each output file ({@code OutputMetadata} reads it
 * back, {@code stepweave info} shows it): what made the file — Stepweave's version, the card, the
 * prompt, the seed and the settings it ran with, the adapters stacked.
 */
final class GenerationMetadata {
  private static final ObjectMapper JSON = new ObjectMapper();

  private GenerationMetadata() {}

  /** The document for the output of {@code request}, made as {@code provenance} records. */
  static String of(Request request, Provenance provenance, String sampler) {
    var p = request.params();
    ObjectNode o = JSON.createObjectNode();
    o.put("stepweave", StepweaveVersion.get());
    o.put("model", provenance.modelId());
    o.put("recipe", provenance.recipe());
    o.put("task", request.task().wireName());
    o.put("prompt", request.prompt());
    o.put("negative_prompt", p.negativePrompt());
    o.put("seed", provenance.seed());
    o.put("sampler", sampler);
    o.put("steps", p.steps());
    o.put("guidance", p.guidance());
    o.put("size", p.width() + "x" + p.height());
    o.put("frames", p.frames());
    o.put("fps", p.fps());
    var adapters = o.putArray("adapters");
    for (AppliedAdapter a : provenance.adapters()) {
      adapters.addObject().put("name", a.name()).put("sha256", a.sha256()).put("scale", a.scale());
    }
    request.images().forEach(image -> o.put("image_sha256", image.sourceSha256()));
    if (!provenance.recipeOverrides().isEmpty()) {
      var overrides = o.putArray("recipe_overrides");
      provenance.recipeOverrides().forEach(overrides::add);
    }
    o.set("settings", JSON.valueToTree(new TreeMap<>(provenance.settings())));
    return o.toString();
  }
}

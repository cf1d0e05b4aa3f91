package dev.stepweave.models.wan;

import dev.stepweave.core.request.Provenance;
import dev.stepweave.core.request.Request;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Provenance of the artifacts a Wan program produces. */
final class WanProvenance {
  private WanProvenance() {}

  static Provenance of(WanModel model, Request request, String node) {
    var p = request.params();
    Map<String, String> settings = new LinkedHashMap<>();
    settings.put("task", request.task().wireName());
    settings.put("sampler", model.samplerFor(request));
    settings.put("steps", Integer.toString(p.steps()));
    settings.put("guidance", Double.toString(p.guidance()));
    settings.put("size", p.width() + "x" + p.height());
    settings.put("frames", Integer.toString(p.frames()));
    settings.put("fps", Integer.toString(p.fps()));
    p.shift().ifPresent(s -> settings.put("shift", Double.toString(s)));
    settings.put("negative_prompt", p.negativePrompt());
    settings.put("precision", model.precision().wireName());
    settings.put("backend", model.backend().name());
    settings.put("weights_version", Long.toString(model.weightsVersion()));
    return new Provenance(
        model.card().modelId(),
        model.card().recipe().method(),
        node,
        request.id(),
        p.seed(),
        settings,
        List.of());
  }
}

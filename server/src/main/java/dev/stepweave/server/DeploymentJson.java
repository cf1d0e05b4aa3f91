package dev.stepweave.server;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.core.card.ModelCard;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.runtime.CostModel;
import dev.stepweave.core.runtime.DeploymentCard;
import dev.stepweave.tensor.Precision;
import java.util.Map;

/**
 * {@code GET /v1/deployment}: the engine's {@link DeploymentCard} with what the server adds — its
 * request limits, the sizes and steps it takes, its health endpoints and its replica — as the JSON
 * a router reads (docs/deploy.md). Versioned by {@code schema_version} (the card's).
 */
final class DeploymentJson {
  private DeploymentJson() {}

  /**
   * @param replicaId this replica's name in the store
   * @param aliases the other names of the served card
   * @param enabledCaches the cache plugins requests may turn on
   * @param pendingJobs jobs queued or running now (the server's count)
   * @param draining whether the server drains
   */
  static ObjectNode of(
      DeploymentCard d,
      ServerConfig limits,
      String replicaId,
      Map<String, String> aliases,
      Iterable<String> enabledCaches,
      int pendingJobs,
      boolean draining) {
    ObjectNode o = Json.MAPPER.createObjectNode();
    o.put("object", "deployment");
    o.put("schema_version", d.schemaVersion());
    o.put("replica_id", replicaId);
    o.put("backend", d.backend());
    o.put("instance_id", d.instanceId());
    ArrayNode models = o.putArray("models");
    ObjectNode model = models.addObject();
    card(model, d.card(), d.precision(), limits);
    ArrayNode names = model.putArray("aliases");
    aliases.keySet().stream().sorted().forEach(names::add);
    ArrayNode caches = model.putArray("enabled_caches");
    enabledCaches.forEach(caches::add);
    o.set("cost_model", costModel(d.costModel()));
    ObjectNode l = o.putObject("limits");
    seconds(l, "max_step_seconds", d.costLimits().maxStepSeconds());
    seconds(l, "max_request_seconds", d.costLimits().maxRequestSeconds());
    l.put("jumbo_class", d.costLimits().jumboClass());
    l.put("max_pending_jobs", limits.maxPendingJobs());
    l.put("max_running", d.budgets().maxRunning());
    l.put("max_batch_size", d.budgets().maxBatchSize());
    if (d.budgets().memoryBudgetBytes() == Long.MAX_VALUE) {
      l.putNull("memory_budget_bytes");
    } else {
      l.put("memory_budget_bytes", d.budgets().memoryBudgetBytes());
    }
    l.put("max_prompt_chars", limits.maxPromptChars());
    l.put("max_images", limits.maxImages());
    l.put("max_body_bytes", limits.maxBodyBytes());
    o.set("health", health());
    ObjectNode load = o.putObject("load");
    load.put("queued", d.load().queued());
    load.put("running", d.load().running());
    load.put("pending_jobs", pendingJobs);
    load.put("accepting", d.load().accepting() && !draining);
    load.put("draining", draining);
    load.put("pool_faults", d.load().poolFaults());
    load.put("admitted", d.load().admitted());
    load.put("completed", d.load().completed());
    load.put("failed", d.load().failed());
    return o;
  }

  private static void card(ObjectNode m, ModelCard card, Precision serving, ServerConfig limits) {
    m.put("id", card.modelId());
    m.put("family", card.family());
    ArrayNode tasks = m.putArray("tasks");
    card.tasks().stream().map(TaskType::wireName).sorted().forEach(tasks::add);
    ArrayNode loops = m.putArray("loops");
    card.loops().values().stream()
        .sorted(java.util.Comparator.comparing(l -> l.id()))
        .forEach(l -> loops.addObject().put("id", l.id()).put("kind", l.kind().name()));
    ObjectNode precision = m.putObject("precision");
    precision.put("serving", serving.name());
    precision.put("default", card.precision().defaultPrecision().name());
    ArrayNode supported = precision.putArray("supported");
    card.precision().supported().stream().map(Precision::name).sorted().forEach(supported::add);
    m.put("recipe", card.recipe().method());
    ArrayNode caches = m.putArray("card_caches");
    card.caches().keySet().stream().sorted().forEach(caches::add);
    ObjectNode defaults = m.putObject("defaults");
    defaults.put("width", card.defaults().width());
    defaults.put("height", card.defaults().height());
    defaults.put("num_frames", card.defaults().frames());
    defaults.put("fps", card.defaults().fps());
    defaults.put("num_inference_steps", card.defaults().steps());
    defaults.put("guidance_scale", card.defaults().guidance());
    ObjectNode s = m.putObject("supported");
    ObjectNode size = s.putObject("size");
    size.put("multiple_of", 16);
    size.put("max_width", limits.maxWidth());
    size.put("max_height", limits.maxHeight());
    ObjectNode frames = s.putObject("num_frames");
    frames.put("form", "4k+1");
    frames.put("max", limits.maxFrames());
    ObjectNode steps = s.putObject("num_inference_steps");
    steps.put("min", 1);
    steps.put("max", limits.maxSteps());
  }

  private static ObjectNode costModel(CostModel.Snapshot c) {
    ObjectNode o = Json.MAPPER.createObjectNode();
    o.put("flops_per_ms", c.flopsPerMilli());
    o.put("bytes_per_ms", c.bytesPerMilli());
    // static: nothing measured yet; calibrated: some kind has measurements.
    o.put("calibration_state", c.calibrations().isEmpty() ? "static" : "calibrated");
    ArrayNode cal = o.putArray("calibrations");
    for (CostModel.Calibration k : c.calibrations()) {
      cal.addObject()
          .put("model", k.modelId())
          .put("kind", k.kind().name())
          .put("precision", k.precision().name())
          .put("factor", k.factor())
          .put("keys", k.keys())
          .put("samples", k.samples());
    }
    ArrayNode entries = o.putArray("entries");
    for (CostModel.Entry e : c.entries()) {
      ObjectNode n = entries.addObject();
      n.put("model", e.key().modelId());
      n.put("kind", e.key().kind().name());
      n.put("shape", e.key().shape().tag() + e.key().shape().dims());
      n.put("precision", e.key().precision().name());
      n.put("batch_size", e.key().batchSize());
      n.put("static_ms", e.staticMillis());
      n.put("predicted_ms", e.predictedMillis());
      n.put("samples", e.samples());
    }
    return o;
  }

  /** The probes a router or Kubernetes uses, and what they answer. */
  private static ObjectNode health() {
    ObjectNode h = Json.MAPPER.createObjectNode();
    h.putObject("liveness").put("path", "/health").put("ok", 200);
    h.putObject("readiness")
        .put("path", "/ready")
        .put("ready", 200)
        .put("not_ready", 503)
        .put("not_ready_when", "draining or rebuilding the pool after a pool-fatal fault");
    h.putObject("metrics").put("path", "/metrics").put("format", "prometheus-text-0.0.4");
    h.putObject("drain").put("path", "/admin/drain").put("method", "POST").put("answers", 202);
    h.put("connector", "every path above is served on the admin port too");
    return h;
  }

  private static void seconds(ObjectNode o, String field, double s) {
    if (Double.isInfinite(s)) {
      o.putNull(field);
    } else {
      o.put(field, s);
    }
  }
}

package dev.stepweave.server;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.core.extend.AdapterRecipe;
import dev.stepweave.core.extend.RegisteredAdapter;
import dev.stepweave.core.extend.ResolvedAdapter;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.RequestEvent;
import dev.stepweave.core.runtime.CostClass;
import dev.stepweave.core.runtime.RequestHandle;
import dev.stepweave.core.runtime.RequestPrice;
import dev.stepweave.core.runtime.StepInFlight;
import dev.stepweave.media.JpegWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The JSON the API answers with: OpenAI's video object, and one event of a job's stream. Its
 * version travels in a response header ({@link #SCHEMA_HEADER}), not in the bodies, so they stay
 * exactly OpenAI-shaped; the number bumps when a field of ours changes meaning or goes away.
 */
final class ApiJson {
  static final String SCHEMA_HEADER = "Stepweave-Schema";
  static final String SCHEMA_VERSION = "1";

  private ApiJson() {}

  /**
   * OpenAI's video object ({@code id, object, model, status, progress, created_at, completed_at,
   * size, seconds, prompt, error}) plus the effective settings, {@code exact}, {@code cache} (the
   * cache plugins it runs with every parameter, or null), {@code cache_report} (what they did, once
   * completed), {@code loras} (the adapters it runs with: name, scale and the file's sha256 when it
   * was submitted; empty when none), {@code task} (t2v, i2v, ti2v), {@code input_reference} (the
   * input image it runs from: the file's sha256, its width, height, format and bytes; null when
   * none), {@code timings}: seconds queued, running, and per loop, and {@code cost}: its price at
   * submit ({@code class} latency or jumbo, {@code predicted_seconds}, {@code
   * largest_step_seconds}, {@code largest_step_loop}), as priced when submitted.
   */
  static ObjectNode video(Job job) {
    if (job.storedView() != null) {
      return stored(job);
    }
    ObjectNode o = Json.MAPPER.createObjectNode();
    o.put("id", job.id());
    o.put("object", "video");
    o.put("model", job.model());
    JobStatus status = job.status();
    o.put("status", status.wireName());
    o.put("progress", job.progress());
    o.put("created_at", job.createdAt().getEpochSecond());
    Instant completed = job.completedAt();
    if (completed == null) {
      o.putNull("completed_at");
    } else {
      o.put("completed_at", completed.getEpochSecond());
    }
    Instant expires = job.expiresAt();
    if (expires == null) {
      o.putNull("expires_at");
    } else {
      o.put("expires_at", expires.getEpochSecond());
    }
    o.put("size", job.settings().size());
    o.put("seconds", job.settings().seconds());
    o.put("prompt", job.settings().prompt());
    o.put("task", job.settings().task().wireName());
    job.settings()
        .image()
        .ifPresentOrElse(
            i ->
                o.putObject("input_reference")
                    .put("sha256", i.image().sourceSha256())
                    .put("width", i.image().width())
                    .put("height", i.image().height())
                    .put("format", i.format())
                    .put("bytes", i.bytes()),
            () -> o.putNull("input_reference"));
    var p = job.settings().params();
    o.put("num_frames", p.frames());
    o.put("fps", p.fps());
    o.put("num_inference_steps", p.steps());
    o.put("guidance_scale", p.guidance());
    o.put("seed", p.seed());
    o.put("exact", job.settings().exact());
    if (job.cache().isEmpty()) {
      o.putNull("cache");
      o.putNull("cache_report");
    } else {
      ObjectNode cache = o.putObject("cache");
      job.cache().forEach((id, params) -> cache.set(id, numbers(params)));
      Map<String, Long> report = job.cacheReport();
      if (report == null) {
        o.putNull("cache_report");
      } else {
        o.set("cache_report", counters(report));
      }
    }
    ArrayNode loras = o.putArray("loras");
    for (ResolvedAdapter a : job.adapters()) {
      loras
          .addObject()
          .put("name", a.name())
          .put("scale", a.scale())
          .put("sha256", a.adapter().sha256());
    }
    error(o, job);
    o.set("timings", timings(job, completed));
    RequestHandle handle = job.handle();
    if (handle != null && handle.price() != null) {
      o.set("cost", cost(handle.price(), handle.costClass()));
    }
    return o;
  }

  /**
   * A stored job's object as the store holds it, with what may have changed since it was written (a
   * restart marks a job {@code interrupted}) taken from the job.
   */
  private static ObjectNode stored(Job job) {
    ObjectNode o = job.storedView().deepCopy();
    o.put("status", job.status().wireName());
    o.put("progress", job.progress());
    Instant completed = job.completedAt();
    if (completed == null) {
      o.putNull("completed_at");
    } else {
      o.put("completed_at", completed.getEpochSecond());
    }
    error(o, job);
    return o;
  }

  private static void error(ObjectNode o, Job job) {
    if (job.status() == JobStatus.FAILED) {
      ObjectNode error = o.putObject("error");
      error.put("code", job.errorCode());
      error.put("message", job.error());
    } else {
      o.putNull("error");
    }
  }

  /**
   * The deployment's adapters as {@code GET /v1/models} and the rescan list them: name, key format,
   * rank, targets, size, content hash and recipe (null when it has none). Never the file's path:
   * requests name adapters, and the server's file system is none of the client's business.
   */
  static ArrayNode adapters(List<RegisteredAdapter> registered) {
    ArrayNode out = Json.MAPPER.createArrayNode();
    for (RegisteredAdapter a : registered) {
      ObjectNode o = out.addObject();
      o.put("name", a.name());
      o.put("format", a.info().format());
      o.put("rank", a.info().rank());
      ArrayNode targets = o.putArray("targets");
      a.info().targets().forEach(targets::add);
      o.put("bytes", a.bytes());
      o.put("sha256", a.sha256());
      a.info().recipe().ifPresentOrElse(r -> o.set("recipe", recipe(r)), () -> o.putNull("recipe"));
    }
    return out;
  }

  private static ObjectNode recipe(AdapterRecipe r) {
    ObjectNode o = Json.MAPPER.createObjectNode();
    o.put("method", r.method());
    o.put("sampler", r.sampler());
    o.put("steps", r.steps());
    o.put("guidance", r.guidance());
    o.put("shift", r.shift());
    return o;
  }

  /** A request's plugin counters, {"dbcache.skipped_blocks": 12, …}, sorted by name. */
  static ObjectNode counters(Map<String, Long> report) {
    ObjectNode o = Json.MAPPER.createObjectNode();
    new TreeMap<>(report).forEach(o::put);
    return o;
  }

  private static ObjectNode numbers(Map<String, Number> params) {
    ObjectNode o = Json.MAPPER.createObjectNode();
    params.forEach(
        (k, v) -> {
          if (v instanceof Long l) {
            o.put(k, l);
          } else {
            o.put(k, v.doubleValue());
          }
        });
    return o;
  }

  static ObjectNode cost(RequestPrice price, CostClass costClass) {
    ObjectNode o = Json.MAPPER.createObjectNode();
    o.put("class", costClass.wire());
    o.put("predicted_seconds", price.requestSeconds());
    o.put("largest_step_seconds", price.largestStepSeconds());
    o.put("largest_step_loop", price.largestStepLoop());
    return o;
  }

  /**
   * OpenAI's deleted object, and how the deletion lands: {@code status} "deleted" (a finished job,
   * gone), "cancelled" (it stops before its next step) or "cancel_requested" (a step of it is in
   * flight; it stops when that indivisible step ends, predicted within {@code
   * cancel_within_seconds}, the step named in {@code step_in_flight}).
   */
  static ObjectNode deleted(String id, String status, StepInFlight inFlight) {
    ObjectNode o = Json.MAPPER.createObjectNode();
    o.put("id", id);
    o.put("object", "video.deleted");
    o.put("deleted", true);
    o.put("status", status);
    if (inFlight != null) {
      o.put("cancel_within_seconds", inFlight.remainingSeconds(Instant.now()));
      ObjectNode step = o.putObject("step_in_flight");
      step.put("loop", inFlight.loopId());
      step.put("step", inFlight.stepIndex() + 1);
      step.put("started_at", inFlight.startedAt().toEpochMilli() / 1e3);
      step.put("predicted_seconds", inFlight.predictedSeconds());
    }
    return o;
  }

  private static ObjectNode timings(Job job, Instant completed) {
    ObjectNode t = Json.MAPPER.createObjectNode();
    Instant started = job.startedAt();
    Instant now = Instant.now();
    if (started != null) {
      t.put("queued_s", seconds(Duration.between(job.createdAt(), started)));
      t.put("running_s", seconds(Duration.between(started, completed == null ? now : completed)));
    } else {
      t.put(
          "queued_s",
          seconds(Duration.between(job.createdAt(), completed == null ? now : completed)));
    }
    ObjectNode loops = t.putObject("loops_s");
    job.loopTimings().forEach((loop, d) -> loops.put(loop, seconds(d)));
    return t;
  }

  /** One engine event as the {@code data:} of a server-sent event. */
  static ObjectNode event(RequestEvent e) {
    ObjectNode o = Json.MAPPER.createObjectNode();
    o.put("type", e.type());
    o.put("id", e.requestId());
    switch (e) {
      case RequestEvent.Queued q -> {}
      case RequestEvent.Started s -> o.put("model", s.modelId());
      case RequestEvent.Step s -> {
        o.put("loop", s.loopId());
        o.put("step", s.step());
        o.put("total_steps", s.totalSteps());
        o.put("elapsed_s", seconds(s.elapsed()));
      }
      case RequestEvent.Completed c -> o.put("elapsed_s", seconds(c.elapsed()));
      case RequestEvent.Failed f -> o.put("message", f.message());
      case RequestEvent.Cancelled c -> {
        o.put("loop", c.loopId());
        o.put("steps_done", c.stepsDone());
      }
      case RequestEvent.ArtifactReady a -> {
        o.put("name", a.artifact().name());
        o.put("kind", kind(a.artifact()));
      }
      case RequestEvent.FramesDecoded f -> {
        o.put("first_frame", f.first());
        o.put("frames", f.frames().dim(0));
      }
      case RequestEvent.MediaPreview m -> {
        o.put("step", m.step());
        o.put("width", m.preview().dim(1));
        o.put("height", m.preview().dim(0));
        o.put("image", previewDataUrl(m.preview()));
      }
    }
    return o;
  }

  /** A preview image, a few KB (latent resolution), as a JPEG data URL an img element shows. */
  private static String previewDataUrl(dev.stepweave.tensor.Tensor rgb) {
    try {
      return "data:image/jpeg;base64,"
          + java.util.Base64.getEncoder().encodeToString(JpegWriter.encode(rgb));
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private static String kind(Artifact a) {
    return switch (a) {
      case Artifact.VideoArtifact v -> "video";
      case Artifact.ImageArtifact i -> "image";
      case Artifact.LatentArtifact l -> "latents";
      case Artifact.TensorArtifact t -> "tensor";
      case Artifact.BehaviorArtifact b -> "behavior";
    };
  }

  private static double seconds(Duration d) {
    return Math.round(d.toNanos() / 1e6) / 1e3;
  }
}

package dev.stepweave.server;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import dev.stepweave.core.extend.AdapterRegistry;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.extend.InvalidAdapterException;
import dev.stepweave.core.extend.ParamSchema;
import dev.stepweave.core.runtime.Engine;
import java.io.IOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.function.BooleanSupplier;

/** Routes every call of the HTTP API and turns failures into OpenAI-shaped errors. */
final class Api implements HttpHandler {
  private static final Set<String> VIDEO_FIELDS =
      Set.of(
          "prompt",
          "model",
          "seconds",
          "size",
          "num_frames",
          "fps",
          "num_inference_steps",
          "guidance_scale",
          Settings.SECOND_GUIDANCE,
          "negative_prompt",
          "seed",
          FormFields.CACHE,
          "exact",
          FormFields.LORAS,
          FormFields.INPUT_REFERENCE);
  private static final Set<String> IMAGE_FIELDS =
      Set.of(
          "prompt",
          "model",
          "n",
          "size",
          "response_format",
          "output_format",
          "user",
          "num_inference_steps",
          "guidance_scale",
          "negative_prompt",
          "seed",
          FormFields.CACHE,
          "exact",
          FormFields.LORAS);

  /** How long a DELETE of a running job waits for the cancellation to land before answering. */
  private static final long CANCEL_WAIT_MS = 2000;

  private final Engine engine;
  private final Jobs jobs;
  private final Settings settings;
  private final ServerConfig limits;
  private final Semaphore exchanges;
  private final BooleanSupplier closing;
  private final long startedAt = Instant.now().getEpochSecond();

  Api(Engine engine, Jobs jobs, ServerConfig limits, BooleanSupplier closing) {
    this.engine = engine;
    this.jobs = jobs;
    this.settings = new Settings(engine.model().card(), limits);
    this.limits = limits;
    this.exchanges = new Semaphore(limits.maxExchanges());
    this.closing = closing;
  }

  @Override
  public void handle(HttpExchange ex) throws IOException {
    try (ex) {
      if (!exchanges.tryAcquire()) {
        Exchanges.sendError(
            ex,
            new ApiException(
                503, "server_error", null, "overloaded", "too many calls in progress; retry"));
        return;
      }
      try {
        route(ex);
      } catch (ApiException e) {
        Exchanges.sendError(ex, e);
      } catch (IOException e) {
        throw e; // the client went away
      } catch (RuntimeException e) {
        String m = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        Exchanges.sendError(
            ex,
            new ApiException(
                500, "server_error", null, "internal_error", m.lines().findFirst().orElse("")));
      } finally {
        exchanges.release();
      }
    }
  }

  private void route(HttpExchange ex) throws IOException {
    String method = ex.getRequestMethod();
    List<String> path = segments(ex.getRequestURI().getRawPath());
    if (path.size() >= 2 && path.get(0).equals("v1") && path.get(1).equals("videos")) {
      videos(ex, method, path);
      return;
    }
    switch (String.join("/", path)) {
      case "health" -> only(ex, "GET", () -> json(ex, 200, status("ok")));
      case "ready" ->
          only(
              ex,
              "GET",
              () ->
                  json(
                      ex,
                      jobs.accepting() ? 200 : 503,
                      status(jobs.accepting() ? "ready" : "not_accepting")));
      case "metrics" ->
          only(
              ex,
              "GET",
              () ->
                  Exchanges.sendText(
                      ex,
                      200,
                      Metrics.CONTENT_TYPE,
                      Metrics.render(engine.stats(), engine.extensions().metrics(), jobs)));
      case "v1/models" -> only(ex, "GET", () -> json(ex, 200, models()));
      case "v1/images/generations" -> only(ex, "POST", () -> json(ex, 200, images(ex)));
      case "v1/loras/rescan" -> only(ex, "POST", () -> json(ex, 200, rescan()));
      default -> throw notFoundRoute(ex);
    }
  }

  private void videos(HttpExchange ex, String method, List<String> path) throws IOException {
    if (path.size() == 2) {
      switch (method) {
        case "POST" -> json(ex, 200, createVideo(ex));
        case "GET" -> json(ex, 200, list(query(ex)));
        default -> throw methodNotAllowed(method);
      }
      return;
    }
    Job job = jobs.video(path.get(2));
    String tail = path.size() == 3 ? "" : String.join("/", path.subList(3, path.size()));
    switch (tail) {
      case "" -> {
        switch (method) {
          case "GET" -> json(ex, 200, ApiJson.video(job));
          case "DELETE" -> json(ex, 200, delete(job));
          default -> throw methodNotAllowed(method);
        }
      }
      case "content" -> only(ex, "GET", () -> content(ex, job));
      case "events" -> only(ex, "GET", () -> new EventStreamResponse(ex, job, closing).send());
      default -> throw notFoundRoute(ex);
    }
  }

  private ObjectNode createVideo(HttpExchange ex) throws IOException {
    FormFields.Form form = form(ex, VIDEO_FIELDS, limits.maxVideoBodyBytes());
    return ApiJson.video(jobs.submitVideo(form, settings.video(form), null));
  }

  private ObjectNode list(Map<String, String> q) {
    int limit = 20;
    if (q.containsKey("limit")) {
      try {
        limit = Integer.parseInt(q.get("limit"));
      } catch (NumberFormatException e) {
        limit = -1;
      }
      if (limit < 1 || limit > 100) {
        throw ApiException.badRequest("limit", "limit must be between 1 and 100");
      }
    }
    String order = q.getOrDefault("order", "desc");
    if (!order.equals("asc") && !order.equals("desc")) {
      throw ApiException.badRequest("order", "order must be asc or desc");
    }
    List<Job> all = new ArrayList<>(jobs.videos());
    if (order.equals("asc")) {
      all = all.reversed();
    }
    int from = 0;
    if (q.containsKey("after")) {
      String after = q.get("after");
      from = all.stream().map(Job::id).toList().indexOf(after) + 1;
      if (from == 0) {
        throw ApiException.badRequest("after", "no video with id '" + after + "'");
      }
    }
    List<Job> page = all.subList(from, Math.min(all.size(), from + limit));
    ObjectNode o = Exchanges.JSON.createObjectNode();
    o.put("object", "list");
    ArrayNode data = o.putArray("data");
    page.forEach(j -> data.add(ApiJson.video(j)));
    o.put("first_id", page.isEmpty() ? null : page.getFirst().id());
    o.put("last_id", page.isEmpty() ? null : page.getLast().id());
    o.put("has_more", from + page.size() < all.size());
    return o;
  }

  /**
   * Cancels a job that is still running (it stops at its next step boundary and stays listed as
   * {@code cancelled}); forgets a finished one and removes its file.
   */
  private ObjectNode delete(Job job) throws IOException {
    if (!job.status().isTerminal()) {
      if (!job.cancel()) {
        throw ApiException.conflict(
            "video_on_other_replica", "video " + job.id() + " runs on another replica");
      }
      try {
        job.finished().get(CANCEL_WAIT_MS, java.util.concurrent.TimeUnit.MILLISECONDS);
      } catch (java.util.concurrent.TimeoutException e) {
        // still between step boundaries: the client sees in_progress and polls
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (ExecutionException e) {
        throw new IllegalStateException("a job's finish future failed", e);
      }
      return ApiJson.video(job);
    }
    jobs.delete(job);
    ObjectNode o = Exchanges.JSON.createObjectNode();
    o.put("id", job.id());
    o.put("object", "video.deleted");
    o.put("deleted", true);
    return o;
  }

  private void content(HttpExchange ex, Job job) throws IOException {
    String variant = query(ex).getOrDefault("variant", "video");
    if (!variant.equals("video")) {
      throw ApiException.badRequest("variant", "only variant=video is available");
    }
    if (job.status() != JobStatus.COMPLETED) {
      throw ApiException.conflict(
          "video_not_ready", "video " + job.id() + " is " + job.status().wireName());
    }
    try (Jobs.Download d = jobs.download(job)) {
      Exchanges.sendFile(ex, "video/mp4", d.file());
      d.delivered();
    }
  }

  /**
   * n images as n one-frame requests, answered when all are done; a failure of one cancels the
   * others.
   */
  private ObjectNode images(HttpExchange ex) throws IOException {
    Map<String, String> fields = fields(ex, IMAGE_FIELDS);
    String format = fields.getOrDefault("response_format", "b64_json");
    if (!format.equals("b64_json")) {
      throw ApiException.badRequest("response_format", "only response_format=b64_json is served");
    }
    if (!fields.getOrDefault("output_format", "png").equals("png")) {
      throw ApiException.badRequest("output_format", "only output_format=png is served");
    }
    int n = settings.n(fields);
    List<Settings.Generation> wanted = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      wanted.add(settings.image(fields, i));
    }
    List<Job> submitted = new ArrayList<>();
    try {
      for (Settings.Generation g : wanted) {
        submitted.add(jobs.submitImage(g));
      }
      ObjectNode o = Exchanges.JSON.createObjectNode();
      o.put("created", Instant.now().getEpochSecond());
      ArrayNode data = o.putArray("data");
      for (Job job : submitted) {
        Job done = job.finished().get();
        switch (done.status()) {
          case COMPLETED -> {
            ObjectNode image =
                data.addObject()
                    .put("b64_json", Base64.getEncoder().encodeToString(jobs.takeImage(done)));
            if (!done.cache().isEmpty()) {
              image.set("cache_report", ApiJson.counters(done.cacheReport()));
            }
          }
          case CANCELLED ->
              throw new ApiException(
                  503, "server_error", null, "cancelled", "the server cancelled the image");
          default ->
              throw new ApiException(
                  500, "server_error", null, "generation_failed", "image failed: " + done.error());
        }
      }
      return o;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ApiException(503, "server_error", null, "cancelled", "the server is stopping");
    } catch (ExecutionException e) {
      throw new IllegalStateException("a job's finish future failed", e);
    } finally {
      submitted.forEach(j -> j.handle().cancel());
    }
  }

  private ObjectNode models() {
    ObjectNode o = Exchanges.JSON.createObjectNode();
    o.put("object", "list");
    ObjectNode m = o.putArray("data").addObject();
    m.put("id", engine.model().card().modelId());
    m.put("object", "model");
    m.put("created", startedAt);
    m.put("owned_by", "stepweave");
    ArrayNode caches = m.putArray("caches");
    Extensions ext = engine.extensions();
    ext.plugins()
        .forEach(
            (id, plugin) -> {
              ObjectNode c = caches.addObject();
              c.put("id", id);
              c.put("distribution_altering", plugin.distributionAltering());
              ObjectNode params = c.putObject("parameters");
              for (ParamSchema.Param p : ext.schema(id).params()) {
                ObjectNode q = params.putObject(p.name());
                q.put("type", p.integer() ? "integer" : "number");
                number(q, "min", p.min(), p.integer());
                number(q, "max", p.max(), p.integer());
                number(q, "default", p.defaultValue(), p.integer());
                q.put("description", p.description());
              }
            });
    m.set("loras", ApiJson.adapters(ext.adapters().list()));
    return o;
  }

  /**
   * Rereads the deployment's adapter files and directories. The server has no API keys, so this is
   * open to every caller that can reach it (docs/server.md); it can only reread what the deployment
   * named at start, never register another path.
   */
  private ObjectNode rescan() {
    AdapterRegistry.Changes changes;
    try {
      changes = jobs.rescanAdapters();
    } catch (InvalidAdapterException e) {
      throw new ApiException(
          400,
          "invalid_request_error",
          null,
          "invalid_adapter",
          "rescan refused, nothing changed: " + e.getMessage().lines().findFirst().orElse(""));
    }
    ObjectNode o = Exchanges.JSON.createObjectNode();
    o.put("object", "lora.rescan");
    changes.added().forEach(o.putArray("added")::add);
    changes.removed().forEach(o.putArray("removed")::add);
    changes.changed().forEach(o.putArray("changed")::add);
    o.set("loras", ApiJson.adapters(engine.extensions().adapters().list()));
    return o;
  }

  private static void number(ObjectNode o, String name, double v, boolean integer) {
    if (integer) {
      o.put(name, (long) v);
    } else {
      o.put(name, v);
    }
  }

  private Map<String, String> fields(HttpExchange ex, Set<String> allowed) throws IOException {
    return form(ex, allowed, limits.maxBodyBytes()).fields();
  }

  private FormFields.Form form(HttpExchange ex, Set<String> allowed, int maxBytes)
      throws IOException {
    byte[] body = Exchanges.readBody(ex, maxBytes);
    return FormFields.parse(ex.getRequestHeaders().getFirst("Content-Type"), body, allowed);
  }

  private static ObjectNode status(String s) {
    return Exchanges.JSON.createObjectNode().put("status", s);
  }

  private static void json(HttpExchange ex, int status, Object body) throws IOException {
    Exchanges.sendJson(ex, status, body);
  }

  private interface Call {
    void run() throws IOException;
  }

  private static void only(HttpExchange ex, String method, Call call) throws IOException {
    String m = ex.getRequestMethod();
    if (!m.equals(method)) {
      throw methodNotAllowed(m);
    }
    call.run();
  }

  private static ApiException methodNotAllowed(String method) {
    return new ApiException(
        405, "invalid_request_error", null, "method_not_allowed", method + " is not allowed here");
  }

  private static ApiException notFoundRoute(HttpExchange ex) {
    return ApiException.notFound("no route " + ex.getRequestURI().getRawPath());
  }

  private static List<String> segments(String rawPath) {
    List<String> out = new ArrayList<>();
    for (String s : rawPath.split("/")) {
      if (!s.isEmpty()) {
        out.add(s);
      }
    }
    return out;
  }

  private static Map<String, String> query(HttpExchange ex) {
    Map<String, String> q = new HashMap<>();
    String raw = ex.getRequestURI().getRawQuery();
    if (raw == null) {
      return q;
    }
    for (String pair : raw.split("&")) {
      int eq = pair.indexOf('=');
      if (eq > 0) {
        try {
          q.put(
              URLDecoder.decode(pair.substring(0, eq), StandardCharsets.UTF_8),
              URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
        } catch (IllegalArgumentException e) {
          throw ApiException.badRequest(null, "malformed query parameter");
        }
      }
    }
    return q;
  }
}

package dev.stepweave.server;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.core.card.GenerationDefaults;
import dev.stepweave.core.card.ModelCard;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.extend.AdapterRegistry;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.extend.InvalidAdapterException;
import dev.stepweave.core.extend.ParamSchema;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.StepInFlight;
import dev.stepweave.media.JpegWriter;
import dev.stepweave.media.Mp4Reader;
import dev.stepweave.media.Spritesheet;
import dev.stepweave.server.store.StoreException;
import dev.stepweave.server.tenant.Tenant;
import dev.stepweave.tensor.Tensor;
import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

/** Routes every call of the HTTP API and turns failures into OpenAI-shaped errors. */
final class Api {
  static final Set<String> VIDEO_FIELDS =
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
          Settings.PREVIEW_EVERY,
          "negative_prompt",
          "seed",
          FormFields.CACHE,
          "exact",
          FormFields.LORAS,
          FormFields.INPUT_REFERENCE);
  static final Set<String> IMAGE_FIELDS =
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

  /** Routes a slow client cannot be kept from: they answer from memory and read no body. */
  private static final Set<String> PROBES = Set.of("health", "ready");

  /** What {@code GET /v1/videos/{id}/content?variant=} may ask for (OpenAI's three). */
  static final Set<String> CONTENT_VARIANTS = Set.of("video", "thumbnail", "spritesheet");

  /** What the admin connector serves; everything else there is a 404. */
  private static final Set<String> ADMIN_ROUTES =
      Set.of("health", "ready", "metrics", "admin/drain", "v1/deployment");

  private final Engine engine;
  private final Jobs jobs;
  private final Settings settings;
  private final ServerConfig limits;
  private final HttpConfig http;
  private final Gatekeeper gate;
  private final Metrics metrics;
  private final Semaphore exchanges;
  private final BooleanSupplier closing;
  private final Runnable drain;
  private final Map<String, AtomicInteger> openStreams = new ConcurrentHashMap<>();
  private final long startedAt = Instant.now().getEpochSecond();

  Api(
      Engine engine,
      Jobs jobs,
      ServerConfig limits,
      HttpConfig http,
      Gatekeeper gate,
      Metrics metrics,
      BooleanSupplier closing,
      Runnable drain) {
    this.engine = engine;
    this.jobs = jobs;
    String served = engine.model().card().modelId();
    http.modelAliases()
        .forEach(
            (alias, card) -> {
              if (!card.equals(served)) {
                throw new IllegalArgumentException(
                    "model alias "
                        + alias
                        + "="
                        + card
                        + ": this server serves '"
                        + served
                        + "', not '"
                        + card
                        + "'");
              }
            });
    this.settings = new Settings(engine.model().card(), limits, http.modelAliases().keySet());
    this.limits = limits;
    this.http = http;
    this.gate = gate;
    this.metrics = metrics;
    this.exchanges = new Semaphore(limits.maxExchanges());
    this.closing = closing;
    this.drain = drain;
  }

  /**
   * Answers one call: the Host and Origin checks, the caller's key and rate, then the route. Every
   * failure is answered in OpenAI's error shape; only a client gone mid-answer is not.
   *
   * @param admin whether the call came in on the admin connector
   */
  void handle(Call ex, boolean admin) {
    Throwable failure = null;
    try {
      String route = String.join("/", segments(ex.rawPath()));
      boolean probe = PROBES.contains(route);
      Tenant tenant = null;
      try {
        if (admin && !ADMIN_ROUTES.contains(route)) {
          throw notFoundRoute(ex);
        }
        Routes.Route known = Routes.of(segments(ex.rawPath()));
        tenant = known != null && known.page() ? gate.visitor(ex) : gate.admit(ex, probe);
        ex.request().setAttribute(Gatekeeper.TENANT_ATTRIBUTE, tenant.label());
        metrics.called(tenant);
        if (ex.method().equals("OPTIONS") && gate.preflight(ex)) {
          ex.sendText(204, "text/plain", "");
        } else if (probe || route.equals("metrics")) {
          route(ex, tenant); // never queued behind API calls
        } else {
          limited(ex, tenant);
        }
      } catch (ApiException e) {
        if (e.status() == 429 && tenant != null) {
          metrics.limited(tenant);
        }
        if (ex.committed()) {
          throw new IOException("failed after the answer began: " + e.getMessage());
        }
        ex.sendError(e);
      } catch (StoreException e) {
        if (ex.committed()) {
          throw e;
        }
        // The database is away (down, failing over, out of connections): the call may succeed
        // later, which a 503 with Retry-After tells clients and routers, where a 500 would not.
        ex.sendError(
            new ApiException(
                503,
                "server_error",
                null,
                "store_unavailable",
                "the job store is unavailable: " + firstLine(e)));
      } catch (RuntimeException e) {
        if (ex.committed()) {
          throw e;
        }
        ex.sendError(new ApiException(500, "server_error", null, "internal_error", firstLine(e)));
      }
    } catch (IOException | RuntimeException e) {
      failure = e; // the client went away, or the answer broke off
    }
    ex.finish(failure);
  }

  private static String firstLine(Throwable e) {
    String m = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    return m.lines().findFirst().orElse("");
  }

  private void limited(Call ex, Tenant tenant) throws IOException {
    if (!exchanges.tryAcquire()) {
      throw new ApiException(
          503, "server_error", null, "overloaded", "too many calls in progress; retry");
    }
    try {
      route(ex, tenant);
    } finally {
      exchanges.release();
    }
  }

  private void route(Call ex, Tenant tenant) throws IOException {
    String method = ex.method();
    List<String> path = segments(ex.rawPath());
    Routes.Route known = Routes.of(path);
    if (known == null) {
      throw notFoundRoute(ex);
    }
    if (!known.methods().contains(method)) {
      throw methodNotAllowed(method);
    }
    if (known.page()) {
      String page = String.join("/", path);
      if (page.equals(OpenApi.ROUTE)) {
        OpenApi.send(ex);
      } else {
        Playground.send(ex, page);
      }
      return;
    }
    if (path.size() >= 2 && path.get(0).equals("v1") && path.get(1).equals("videos")) {
      videos(ex, method, path, tenant);
      return;
    }
    if (path.size() == 3 && path.get(0).equals("v1") && path.get(1).equals("models")) {
      only(ex, "GET", () -> json(ex, 200, model(path.get(2))));
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
          only(ex, "GET", () -> ex.sendText(200, Metrics.CONTENT_TYPE, metrics.render(tenant)));
      case "v1/models" -> only(ex, "GET", () -> json(ex, 200, models()));
      case "v1/deployment" -> only(ex, "GET", () -> json(ex, 200, deployment()));
      case "v1/images/generations" -> only(ex, "POST", () -> json(ex, 200, images(ex, tenant)));
      case "v1/loras/rescan" ->
          only(
              ex,
              "POST",
              () -> {
                requireAdmin(tenant, "rescan adapters");
                json(ex, 200, rescan());
              });
      case "admin/drain" ->
          only(
              ex,
              "POST",
              () -> {
                requireAdmin(tenant, "drain the server");
                Thread.ofVirtual().name("stepweave-admin-drain").start(drain);
                json(ex, 202, status("draining"));
              });
      default -> throw notFoundRoute(ex);
    }
  }

  private static void requireAdmin(Tenant tenant, String what) {
    if (!tenant.admin()) {
      throw ApiException.forbidden(
          "admin_only", "only the admin key may " + what + " (label 'admin' in the key file)");
    }
  }

  private void videos(Call ex, String method, List<String> path, Tenant tenant) throws IOException {
    if (path.size() == 2) {
      switch (method) {
        case "POST" -> json(ex, 200, createVideo(ex, tenant));
        case "GET" -> json(ex, 200, list(ex.query(), tenant));
        default -> throw methodNotAllowed(method);
      }
      return;
    }
    Job job = jobs.video(path.get(2), tenant.id());
    String tail = path.size() == 3 ? "" : String.join("/", path.subList(3, path.size()));
    switch (tail) {
      case "" -> {
        switch (method) {
          case "GET" -> json(ex, 200, ApiJson.video(job));
          case "DELETE" -> json(ex, 200, delete(job));
          default -> throw methodNotAllowed(method);
        }
      }
      case "content" -> {
        if (!method.equals("GET") && !method.equals("HEAD")) {
          throw methodNotAllowed(method);
        }
        content(ex, job);
      }
      case "events" -> only(ex, "GET", () -> events(ex, job, tenant));
      default -> throw notFoundRoute(ex);
    }
  }

  /** A job's event stream, counted against the key's open streams while it lasts. */
  private void events(Call ex, Job job, Tenant tenant) throws IOException {
    AtomicInteger open = openStreams.computeIfAbsent(tenant.id(), t -> new AtomicInteger());
    if (!tenant.anonymous() && open.incrementAndGet() > http.keyMaxStreams()) {
      open.decrementAndGet();
      throw new ApiException(
          429,
          "requests",
          null,
          "too_many_streams",
          "this key already has " + http.keyMaxStreams() + " event streams open");
    }
    try {
      new EventStreamResponse(ex, job, closing).send();
    } finally {
      if (!tenant.anonymous()) {
        open.decrementAndGet();
      }
    }
  }

  /** Open event streams by tenant id, for the admin's metrics. */
  Map<String, AtomicInteger> openStreams() {
    return openStreams;
  }

  private ObjectNode createVideo(Call ex, Tenant tenant) throws IOException {
    FormFields.Form form = form(ex, VIDEO_FIELDS, limits.maxVideoBodyBytes());
    return ApiJson.video(jobs.submitVideo(form, settings.video(form), tenant.id()));
  }

  private ObjectNode list(Map<String, String> q, Tenant tenant) {
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
    List<Job> all = new ArrayList<>(jobs.videos(tenant.id()));
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
    ObjectNode o = Json.MAPPER.createObjectNode();
    o.put("object", "list");
    ArrayNode data = o.putArray("data");
    page.forEach(j -> data.add(ApiJson.video(j)));
    o.put("first_id", page.isEmpty() ? null : page.getFirst().id());
    o.put("last_id", page.isEmpty() ? null : page.getLast().id());
    o.put("has_more", from + page.size() < all.size());
    return o;
  }

  /**
   * OpenAI's delete: a finished job is forgotten and its file removed; one still queued or running
   * is cancelled (it stops at its next step boundary: when the step in flight, if any, ends) and is
   * gone for clients at once. Either way the answer is the deleted object, saying how it lands.
   */
  private ObjectNode delete(Job job) throws IOException {
    StepInFlight inFlight = job.stepInFlight().orElse(null);
    if (job.status().isTerminal()) {
      jobs.delete(job);
      return ApiJson.deleted(job.id(), "deleted", null);
    }
    if (!jobs.deleteUnfinished(job)) {
      throw ApiException.conflict(
          "video_on_other_replica", "video " + job.id() + " runs on another replica");
    }
    return ApiJson.deleted(job.id(), inFlight == null ? "cancelled" : "cancel_requested", inFlight);
  }

  private void content(Call ex, Job job) throws IOException {
    String variant = ex.query().getOrDefault("variant", "video");
    if (!CONTENT_VARIANTS.contains(variant)) {
      throw ApiException.badRequest(
          "variant", "variant must be video, thumbnail or spritesheet, got '" + variant + "'");
    }
    if (job.status() != JobStatus.COMPLETED) {
      throw ApiException.conflict(
          "video_not_ready", "video " + job.id() + " is " + job.status().wireName());
    }
    Jobs.Download d = jobs.download(job);
    if (!variant.equals("video")) {
      try (d) {
        // Decoded on demand from the MP4, a frame at a time: nothing more on disk.
        Tensor image =
            variant.equals("thumbnail")
                ? Mp4Reader.middleFrame(d.file())
                : Spritesheet.of(d.file());
        ex.sendBytes(200, "image/jpeg", JpegWriter.encode(image));
      }
    } else {
      // The file stays protected from retention until Jetty has sent it; only a whole GET (not a
      // range, HEAD or 304) counts as the fetch the drain waits for.
      ex.sendFile(
          "video/mp4",
          d.file(),
          whole -> {
            if (whole) {
              d.delivered();
            }
            d.close();
          });
    }
  }

  /**
   * n images as n one-frame requests, answered when all are done; a failure of one cancels the
   * others.
   */
  private ObjectNode images(Call ex, Tenant tenant) throws IOException {
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
        submitted.add(jobs.submitImage(g, tenant.id()));
      }
      ObjectNode o = Json.MAPPER.createObjectNode();
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

  /** {@code GET /v1/deployment}: the engine's deployment card, what a router reads (§14). */
  private ObjectNode deployment() {
    return DeploymentJson.of(
        engine.deploymentCard(),
        limits,
        jobs.replicaId(),
        http.modelAliases(),
        engine.extensions().plugins().keySet(),
        jobs.pending(),
        jobs.draining());
  }

  /** The served model, then one entry per alias (OpenAI's list of model objects). */
  private ObjectNode models() {
    ObjectNode o = Json.MAPPER.createObjectNode();
    o.put("object", "list");
    ArrayNode data = o.putArray("data");
    data.add(servedModel());
    http.modelAliases().keySet().stream().sorted().forEach(a -> data.add(alias(a)));
    return o;
  }

  /** {@code GET /v1/models/{id}}: the served model or an alias of it; 404 for any other id. */
  private ObjectNode model(String id) {
    if (id.equals(engine.model().card().modelId())) {
      return servedModel();
    }
    if (http.modelAliases().containsKey(id)) {
      return alias(id);
    }
    throw new ApiException(
        404,
        "invalid_request_error",
        "model",
        "model_not_found",
        "model '"
            + id
            + "' is not served here (this server serves '"
            + engine.model().card().modelId()
            + "')");
  }

  private ObjectNode alias(String name) {
    ObjectNode m = Json.MAPPER.createObjectNode();
    m.put("id", name);
    m.put("object", "model");
    m.put("created", startedAt);
    m.put("owned_by", "stepweave");
    m.put("alias_of", engine.model().card().modelId());
    return m;
  }

  private ObjectNode servedModel() {
    ObjectNode m = Json.MAPPER.createObjectNode();
    m.put("id", engine.model().card().modelId());
    m.put("object", "model");
    m.put("created", startedAt);
    m.put("owned_by", "stepweave");
    ModelCard card = engine.model().card();
    ArrayNode tasks = m.putArray("tasks");
    card.tasks().stream().map(TaskType::wireName).sorted().forEach(tasks::add);
    GenerationDefaults d = card.defaults();
    m.putObject("defaults")
        .put("size", d.width() + "x" + d.height())
        .put("num_frames", d.frames())
        .put("fps", d.fps())
        .put("num_inference_steps", d.steps())
        .put("guidance_scale", d.guidance());
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
    return m;
  }

  /**
   * Rereads the deployment's adapter files and directories: the admin key's call where the server
   * has keys (docs/server.md); it can only reread what the deployment named at start, never
   * register another path.
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
    ObjectNode o = Json.MAPPER.createObjectNode();
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

  private Map<String, String> fields(Call ex, Set<String> allowed) throws IOException {
    return form(ex, allowed, limits.maxBodyBytes()).fields();
  }

  private FormFields.Form form(Call ex, Set<String> allowed, int maxBytes) throws IOException {
    byte[] body = ex.readBody(maxBytes);
    return FormFields.parse(ex.header("Content-Type"), body, allowed);
  }

  private static ObjectNode status(String s) {
    return Json.MAPPER.createObjectNode().put("status", s);
  }

  private static void json(Call ex, int status, Object body) throws IOException {
    ex.sendJson(status, body);
  }

  private interface Action {
    void run() throws IOException;
  }

  private static void only(Call ex, String method, Action call) throws IOException {
    String m = ex.method();
    if (!m.equals(method)) {
      throw methodNotAllowed(m);
    }
    call.run();
  }

  private static ApiException methodNotAllowed(String method) {
    return new ApiException(
        405, "invalid_request_error", null, "method_not_allowed", method + " is not allowed here");
  }

  private static ApiException notFoundRoute(Call ex) {
    return ApiException.notFound("no route " + ex.rawPath());
  }

  private static List<String> segments(String rawPath) {
    return Routes.segments(rawPath);
  }
}

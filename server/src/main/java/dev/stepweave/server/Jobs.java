package dev.stepweave.server;

import dev.stepweave.core.card.RecipeRefusedException;
import dev.stepweave.core.extend.ActivePlugin;
import dev.stepweave.core.extend.AdapterRegistry;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.extend.ParamSchema;
import dev.stepweave.core.extend.ResolvedAdapter;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.CancelledException;
import dev.stepweave.core.request.InvalidRequestException;
import dev.stepweave.core.request.ModalPart;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.AdmissionRejectedException;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.GenerationResult;
import dev.stepweave.core.runtime.RequestHandle;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * The jobs of one server: admission (pending limit, drain), submission to the engine, writing each
 * finished output into the artifact store, and the registry of video jobs the API can see.
 */
final class Jobs implements AutoCloseable {
  private final Engine engine;
  private final ArtifactStore store;
  private final ServerConfig limits;
  private final Map<String, Job> videos = new ConcurrentHashMap<>();
  private final Set<Job> unfinished = ConcurrentHashMap.newKeySet();
  private final AtomicInteger pending = new AtomicInteger();
  private final AtomicLong sequence = new AtomicLong();
  private final AtomicLong refusedBusy = new AtomicLong();
  private final AtomicLong refusedDraining = new AtomicLong();
  private final AtomicLong refusedTenant = new AtomicLong();
  private final int ownerMaxPending;
  private final Map<String, AtomicInteger> pendingByOwner = new ConcurrentHashMap<>();
  private volatile boolean draining;
  // Submissions read the adapter registry, a rescan replaces it: a job reports the very files the
  // engine resolved its adapters to.
  private final ReadWriteLock adapterTable = new ReentrantReadWriteLock();
  // Encoding happens off the engine's threads so that it never delays another request's steps.
  private final ExecutorService writer =
      Executors.newSingleThreadExecutor(
          r -> {
            Thread t = new Thread(r, "stepweave-artifacts");
            t.setDaemon(true);
            return t;
          });

  /**
   * @param ownerMaxPending jobs one key may have queued or running (the anonymous owner "" of a
   *     server without keys has only the server's limit)
   */
  Jobs(Engine engine, ArtifactStore store, ServerConfig limits, int ownerMaxPending) {
    this.engine = engine;
    this.store = store;
    this.limits = limits;
    this.ownerMaxPending = ownerMaxPending;
  }

  boolean accepting() {
    return !draining && engine.stats().accepting();
  }

  long refusedBusy() {
    return refusedBusy.get();
  }

  long refusedDraining() {
    return refusedDraining.get();
  }

  long refusedTenant() {
    return refusedTenant.get();
  }

  int pending() {
    return pending.get();
  }

  /** Jobs queued or running by owner. */
  Map<String, Integer> pendingByOwner() {
    Map<String, Integer> out = new java.util.TreeMap<>();
    pendingByOwner.forEach((owner, n) -> out.put(owner, n.get()));
    return out;
  }

  Job submitVideo(Settings.Generation g, String owner) {
    Job job = submit(JobIds.VIDEO, g, owner);
    videos.put(job.id(), job);
    return job;
  }

  Job submitImage(Settings.Generation g, String owner) {
    return submit(JobIds.IMAGE, g, owner);
  }

  /**
   * Reads the deployment's adapter files and directories again (see {@link
   * AdapterRegistry#rescan}); waits for submissions in progress, so each job's adapters are the
   * ones it runs with.
   *
   * @throws dev.stepweave.core.extend.InvalidAdapterException naming a refused file; the registry
   *     is then unchanged
   */
  AdapterRegistry.Changes rescanAdapters() {
    adapterTable.writeLock().lock();
    try {
      return engine.extensions().adapters().rescan();
    } finally {
      adapterTable.writeLock().unlock();
    }
  }

  /** The PNG bytes of a completed image job; the file is removed once read. */
  byte[] takeImage(Job job) throws IOException {
    var file = store.imageFile(job.id());
    try {
      return Files.readAllBytes(file);
    } finally {
      Files.deleteIfExists(file);
    }
  }

  /** The video {@code owner} created; another owner's is as unknown as a made-up id (404). */
  Job video(String id, String owner) {
    Job job = JobIds.isValid(id) ? videos.get(id) : null;
    if (job == null || !job.owner().equals(owner)) {
      throw ApiException.notFound("no video with id '" + id + "'");
    }
    return job;
  }

  /** The video jobs of {@code owner}, newest first. */
  List<Job> videos(String owner) {
    return videos.values().stream()
        .filter(j -> j.owner().equals(owner))
        .sorted(Comparator.comparingLong(Job::sequence).reversed())
        .toList();
  }

  Path videoFile(Job job) {
    return store.videoFile(job.id());
  }

  /** Forgets a finished video and removes its file. */
  void delete(Job job) throws IOException {
    videos.remove(job.id());
    Files.deleteIfExists(store.videoFile(job.id()));
  }

  /**
   * Stops admitting, drains the engine (running and queued requests finish; after {@code timeout}
   * what is left is cancelled at its next step boundary), then waits for the last outputs to be
   * written.
   *
   * @return true when every request finished within {@code timeout}
   */
  boolean drain(Duration timeout) {
    draining = true;
    boolean clean;
    try {
      clean = engine.drain(timeout);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
    CompletableFuture<?>[] all =
        unfinished.stream().map(Job::finished).toArray(CompletableFuture[]::new);
    try {
      CompletableFuture.allOf(all).get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    } catch (ExecutionException e) {
      throw new IllegalStateException("a job's finish future failed", e);
    }
    return clean;
  }

  private Job submit(String prefix, Settings.Generation g, String owner) {
    if (!accepting()) {
      refusedDraining.incrementAndGet();
      throw new ApiException(
          503,
          "server_error",
          null,
          "not_accepting",
          "the server is draining and admits no new jobs");
    }
    AtomicInteger mine = pendingByOwner.computeIfAbsent(owner, o -> new AtomicInteger());
    if (mine.incrementAndGet() > ownerMaxPending && !owner.isEmpty()) {
      mine.decrementAndGet();
      refusedTenant.incrementAndGet();
      throw new ApiException(
          429,
          "rate_limit_exceeded",
          null,
          "tenant_queue_full",
          "this key already has " + ownerMaxPending + " jobs queued or running; retry later");
    }
    Runnable released =
        () -> {
          pending.decrementAndGet();
          mine.decrementAndGet();
        };
    if (pending.incrementAndGet() > limits.maxPendingJobs()) {
      released.run();
      refusedBusy.incrementAndGet();
      throw new ApiException(
          429,
          "rate_limit_exceeded",
          null,
          "queue_full",
          limits.maxPendingJobs() + " jobs are already queued or running; retry later");
    }
    String id = JobIds.next(prefix);
    List<ModalPart> inputs = new ArrayList<>();
    inputs.add(new ModalPart.Text(g.prompt()));
    g.image().ifPresent(i -> inputs.add(i.image()));
    Request request =
        Request.builder(g.task(), g.params())
            .id(id)
            .inputs(inputs)
            .plugins(g.plugins())
            .exact(g.exact())
            .adapters(g.adapters())
            .nodeOverrides(g.loopSettings())
            .build();
    RequestHandle handle;
    List<ResolvedAdapter> adapters;
    adapterTable.readLock().lock();
    try {
      handle = engine.submit(request);
      // What the engine resolved under this same lock, so this cannot refuse.
      adapters = engine.extensions().adapters().resolve(request);
    } catch (InvalidRequestException e) {
      released.run();
      throw ApiException.badRequest(e.field().map(Jobs::wireField).orElse(null), firstLine(e));
    } catch (RecipeRefusedException e) {
      released.run();
      throw new ApiException(400, "invalid_request_error", null, "recipe_refused", e.getMessage());
    } catch (AdmissionRejectedException e) {
      released.run();
      throw new ApiException(400, "invalid_request_error", null, "exceeds_capacity", firstLine(e));
    } catch (IllegalStateException e) { // draining or closed
      released.run();
      throw new ApiException(503, "server_error", null, "not_accepting", firstLine(e));
    } catch (IllegalArgumentException e) { // InvalidRequestException, or a task the card lacks
      released.run();
      throw ApiException.badRequest(null, firstLine(e));
    } finally {
      adapterTable.readLock().unlock();
    }
    Job job =
        new Job(
            id,
            sequence.incrementAndGet(),
            owner,
            engine.model().card().modelId(),
            g,
            effectiveCache(request),
            adapters,
            engine.model().card().loopsFor(g.task()),
            handle);
    unfinished.add(job);
    job.finished()
        .thenRun(
            () -> {
              unfinished.remove(job);
              released.run();
            });
    handle.result().whenCompleteAsync((result, error) -> finish(job, result, error), writer);
    return job;
  }

  private void finish(Job job, GenerationResult result, Throwable error) {
    Throwable cause = error instanceof CompletionException c ? c.getCause() : error;
    if (cause instanceof CancelledException) {
      job.cancelled();
    } else if (cause != null) {
      job.fail(firstLine(cause));
    } else {
      try {
        if (job.id().startsWith(JobIds.IMAGE)) {
          store.writeImage(job.id(), result.artifact(Artifact.ImageArtifact.class).pixels());
        } else {
          Artifact.VideoArtifact v = result.artifact(Artifact.VideoArtifact.class);
          store.writeVideo(job.id(), v.frames(), v.fps());
        }
        job.complete(result.loopTimings(), result.report());
      } catch (IOException | RuntimeException e) {
        job.fail("could not write the output: " + firstLine(e));
      }
    }
  }

  /**
   * The request's cache plugins with every parameter as it runs (the deployment's defaults filled
   * in), for the job object; the engine has accepted them, so this cannot refuse.
   */
  private Map<String, Map<String, Number>> effectiveCache(Request request) {
    Extensions ext = engine.extensions();
    Map<String, Map<String, Number>> out = new LinkedHashMap<>();
    for (ActivePlugin a : ext.admit(request, engine.model().card())) {
      Map<String, Number> params = new LinkedHashMap<>();
      for (ParamSchema.Param p : ext.schema(a.id()).params()) {
        double v = a.params().number(p.name());
        params.put(p.name(), p.integer() ? (Number) (long) v : (Number) v);
      }
      out.put(a.id(), params);
    }
    return out;
  }

  /**
   * The engine's request field ("plugins.dbcache.threshold") as the API's ("cache.dbcache…",
   * "input_reference" for the image); null for the task, which the server declares (the message
   * names the task and the card's).
   */
  static String wireField(String field) {
    if (field.equals("task")) {
      return null;
    }
    if (field.equals(Request.IMAGE)) {
      return FormFields.INPUT_REFERENCE;
    }
    if (field.equals("denoise.guidance_2")) {
      return Settings.SECOND_GUIDANCE;
    }
    return field.equals("plugins") || field.startsWith("plugins.")
        ? FormFields.CACHE + field.substring("plugins".length())
        : field;
  }

  private static String firstLine(Throwable t) {
    String m = t.getMessage();
    return m == null ? t.getClass().getSimpleName() : m.lines().findFirst().orElse("");
  }

  @Override
  public void close() {
    writer.shutdownNow();
  }
}

package dev.stepweave.server;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.core.extend.ResolvedAdapter;
import dev.stepweave.core.request.RequestEvent;
import dev.stepweave.core.runtime.RequestHandle;
import dev.stepweave.core.runtime.StepInFlight;
import dev.stepweave.server.store.JobRow;
import java.time.Duration;
import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.SubmissionPublisher;
import java.util.function.Consumer;

/**
 * One submitted generation as the API sees it: status and progress follow the request's events; the
 * job turns terminal only after its output file is written, so {@code completed} always means the
 * content can be downloaded.
 *
 * <p>A job is live (this process runs it: it has a {@link RequestHandle}) or stored: read back from
 * the job store after a restart, or run by another replica; a stored job shows the object the store
 * holds and cannot be cancelled from here.
 */
final class Job {
  private final String id;
  private final long sequence;
  private final Instant createdAt;
  private final String owner;
  private final String model;
  private final Settings.Generation settings;
  private final Map<String, Map<String, Number>> cache;
  private final List<ResolvedAdapter> adapters;
  private final List<String> loopIds;
  private final RequestHandle handle;
  private final ObjectNode storedView;
  private final CompletableFuture<Job> finished = new CompletableFuture<>();
  private volatile Consumer<Job> onChange = j -> {};
  private volatile boolean cancelRequested;

  private JobStatus status = JobStatus.QUEUED;
  private int progress;
  private Instant startedAt;
  private Instant completedAt;
  private String error;
  private String errorCode;
  private Instant expiresAt;
  private Map<String, Duration> loopTimings = Map.of();
  private Map<String, Long> cacheReport;

  /**
   * A live job.
   *
   * @param owner the tenant id of the key that made it ("" when the server has no keys)
   * @param startedAt when an earlier process started it (a resumed job), else null
   */
  Job(
      String id,
      long sequence,
      Instant createdAt,
      Instant startedAt,
      String owner,
      String model,
      Settings.Generation settings,
      Map<String, Map<String, Number>> cache,
      List<ResolvedAdapter> adapters,
      List<String> loopIds,
      RequestHandle handle) {
    this.id = id;
    this.sequence = sequence;
    this.createdAt = createdAt;
    this.startedAt = startedAt;
    this.status = startedAt == null ? JobStatus.QUEUED : JobStatus.IN_PROGRESS;
    this.owner = owner;
    this.model = model;
    this.settings = settings;
    this.cache = Collections.unmodifiableMap(new LinkedHashMap<>(cache));
    this.adapters = List.copyOf(adapters);
    this.loopIds = List.copyOf(loopIds);
    this.handle = handle;
    this.storedView = null;
    handle.events().subscribe(new Tracker());
  }

  private Job(JobRow row, ObjectNode view) {
    this.id = row.id();
    this.sequence = row.sequence();
    this.createdAt = row.createdAt();
    this.owner = owner(row);
    this.model = view.path("model").asText();
    this.settings = null;
    this.cache = Map.of();
    this.adapters = List.of();
    this.loopIds = List.of();
    this.handle = null;
    this.storedView = view;
    this.status = JobStatus.fromWire(row.status());
    this.progress = row.progress();
    this.startedAt = row.startedAt();
    this.completedAt = row.completedAt();
    this.error = row.errorMessage();
    this.errorCode = row.errorCode();
    if (status.isTerminal()) {
      finished.complete(this);
    }
  }

  /** A job as the store holds it (see the class comment). */
  static Job stored(JobRow row, ObjectNode view) {
    return new Job(row, view);
  }

  /** The object the store holds for a stored job; null for a live one. */
  ObjectNode storedView() {
    return storedView;
  }

  /** A row's owner as a job's: the store keeps the anonymous owner "" as null. */
  static String owner(JobRow row) {
    return row.owner() == null ? "" : row.owner();
  }

  /** Called (on the thread of the change) whenever status or progress changes. */
  void onChange(Consumer<Job> listener) {
    onChange = listener;
  }

  /**
   * Asks a live job to stop at its next step boundary ({@code DELETE}); the cancellation is the
   * client's, so the job ends {@code cancelled} rather than resuming after a restart.
   *
   * @return false for a stored job, which this process cannot cancel
   */
  boolean cancel() {
    if (handle == null) {
      return false;
    }
    cancelRequested = true;
    handle.cancel();
    return true;
  }

  /** The step it is running now (a live job's, while its call runs). */
  Optional<StepInFlight> stepInFlight() {
    return handle == null ? Optional.empty() : handle.stepInFlight();
  }

  /** Whether a client asked to cancel it (a drain's cancellation is the server's, not this). */
  boolean cancelRequested() {
    return cancelRequested;
  }

  /** The request's events; a stored job has none to give (the stream ends at once). */
  Flow.Publisher<RequestEvent> events() {
    if (handle != null) {
      return handle.events();
    }
    SubmissionPublisher<RequestEvent> none = new SubmissionPublisher<>();
    none.close();
    return none;
  }

  String id() {
    return id;
  }

  long sequence() {
    return sequence;
  }

  /** The tenant id of the key that created the job ("" without keys). */
  String owner() {
    return owner;
  }

  String model() {
    return model;
  }

  Settings.Generation settings() {
    return settings;
  }

  /** The cache plugins the job runs, each with its effective parameters; empty when none. */
  Map<String, Map<String, Number>> cache() {
    return cache;
  }

  /** The adapters the job runs with, in stacking order, pinned to their files at submission. */
  List<ResolvedAdapter> adapters() {
    return adapters;
  }

  /** What its plugins did ("dbcache.skipped_blocks" → 12), once completed; null before. */
  synchronized Map<String, Long> cacheReport() {
    return cacheReport;
  }

  RequestHandle handle() {
    return handle;
  }

  Instant createdAt() {
    return createdAt;
  }

  /** Completes (never exceptionally) once the job is terminal. */
  CompletableFuture<Job> finished() {
    return finished;
  }

  synchronized JobStatus status() {
    return status;
  }

  synchronized int progress() {
    return progress;
  }

  synchronized Instant startedAt() {
    return startedAt;
  }

  synchronized Instant completedAt() {
    return completedAt;
  }

  synchronized String error() {
    return error;
  }

  /** When retention removes the video at the latest (its TTL), or null when it keeps it. */
  synchronized Instant expiresAt() {
    return expiresAt;
  }

  synchronized void expiresAt(Instant at) {
    expiresAt = at;
  }

  /**
   * The API's error code once failed ({@code generation_failed}, {@code interrupted}), else null.
   */
  synchronized String errorCode() {
    return errorCode;
  }

  synchronized Map<String, Duration> loopTimings() {
    return loopTimings;
  }

  void complete(Map<String, Duration> timings, Map<String, Long> report) {
    synchronized (this) {
      loopTimings = new LinkedHashMap<>(timings);
      cacheReport = Map.copyOf(report);
      progress = 100;
    }
    end(JobStatus.COMPLETED, null, null);
  }

  void fail(String message) {
    end(JobStatus.FAILED, "generation_failed", message);
  }

  void fail(String code, String message) {
    end(JobStatus.FAILED, code, message);
  }

  void cancelled() {
    end(JobStatus.CANCELLED, null, null);
  }

  /**
   * The server stopped the job to shut down: it stays unfinished (its checkpoint resumes it after
   * the restart), but nothing here waits for it any more.
   */
  void suspended() {
    finished.complete(this);
  }

  private void end(JobStatus terminal, String code, String message) {
    synchronized (this) {
      if (status.isTerminal()) {
        return;
      }
      status = terminal;
      error = message;
      errorCode = code;
      completedAt = Instant.now();
    }
    onChange.accept(this);
    finished.complete(this);
  }

  private void started() {
    synchronized (this) {
      if (status != JobStatus.QUEUED) {
        return;
      }
      status = JobStatus.IN_PROGRESS;
      startedAt = Instant.now();
    }
    onChange.accept(this);
  }

  /** Progress over the program's loops, each counted equally, below 100 until the output exists. */
  private void stepped(RequestEvent.Step s) {
    int loop = Math.max(0, loopIds.indexOf(s.loopId()));
    double done = (loop + s.step() / (double) Math.max(1, s.totalSteps())) / loopIds.size();
    synchronized (this) {
      int next = Math.max(progress, Math.min(99, (int) Math.floor(done * 100)));
      if (next == progress) {
        return;
      }
      progress = next;
    }
    onChange.accept(this);
  }

  /** Follows the request's events; the job's terminal state is set by whoever writes the output. */
  private final class Tracker implements Flow.Subscriber<RequestEvent> {
    @Override
    public void onSubscribe(Flow.Subscription s) {
      s.request(Long.MAX_VALUE);
    }

    @Override
    public void onNext(RequestEvent e) {
      switch (e) {
        case RequestEvent.Started ignored -> started();
        case RequestEvent.Step s -> {
          started();
          stepped(s);
        }
        default -> {}
      }
    }

    @Override
    public void onError(Throwable t) {}

    @Override
    public void onComplete() {}
  }
}

package dev.stepweave.server;

import dev.stepweave.core.extend.ResolvedAdapter;
import dev.stepweave.core.request.RequestEvent;
import dev.stepweave.core.runtime.RequestHandle;
import java.time.Duration;
import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;

/**
 * One submitted generation as the API sees it: status and progress follow the request's events; the
 * job turns terminal only after its output file is written, so {@code completed} always means the
 * content can be downloaded.
 */
final class Job {
  private final String id;
  private final long sequence;
  private final String owner;
  private final Instant createdAt = Instant.now();
  private final String model;
  private final Settings.Generation settings;
  private final Map<String, Map<String, Number>> cache;
  private final List<ResolvedAdapter> adapters;
  private final List<String> loopIds;
  private final RequestHandle handle;
  private final CompletableFuture<Job> finished = new CompletableFuture<>();

  private JobStatus status = JobStatus.QUEUED;
  private int progress;
  private Instant startedAt;
  private Instant completedAt;
  private String error;
  private Map<String, Duration> loopTimings = Map.of();
  private Map<String, Long> cacheReport;

  Job(
      String id,
      long sequence,
      String owner,
      String model,
      Settings.Generation settings,
      Map<String, Map<String, Number>> cache,
      List<ResolvedAdapter> adapters,
      List<String> loopIds,
      RequestHandle handle) {
    this.id = id;
    this.sequence = sequence;
    this.owner = owner;
    this.model = model;
    this.settings = settings;
    this.cache = Collections.unmodifiableMap(new LinkedHashMap<>(cache));
    this.adapters = List.copyOf(adapters);
    this.loopIds = List.copyOf(loopIds);
    this.handle = handle;
    handle.events().subscribe(new Tracker());
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

  synchronized Map<String, Duration> loopTimings() {
    return loopTimings;
  }

  void complete(Map<String, Duration> timings, Map<String, Long> report) {
    synchronized (this) {
      loopTimings = new LinkedHashMap<>(timings);
      cacheReport = Map.copyOf(report);
      progress = 100;
    }
    end(JobStatus.COMPLETED, null);
  }

  void fail(String message) {
    end(JobStatus.FAILED, message);
  }

  void cancelled() {
    end(JobStatus.CANCELLED, null);
  }

  private void end(JobStatus terminal, String message) {
    synchronized (this) {
      if (status.isTerminal()) {
        return;
      }
      status = terminal;
      error = message;
      completedAt = Instant.now();
    }
    finished.complete(this);
  }

  private synchronized void started() {
    if (status == JobStatus.QUEUED) {
      status = JobStatus.IN_PROGRESS;
      startedAt = Instant.now();
    }
  }

  /** Progress over the program's loops, each counted equally, below 100 until the output exists. */
  private synchronized void stepped(RequestEvent.Step s) {
    int loop = Math.max(0, loopIds.indexOf(s.loopId()));
    double done = (loop + s.step() / (double) Math.max(1, s.totalSteps())) / loopIds.size();
    progress = Math.max(progress, Math.min(99, (int) Math.floor(done * 100)));
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

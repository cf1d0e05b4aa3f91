package dev.stepweave.server;

import com.fasterxml.jackson.databind.node.ObjectNode;
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
import dev.stepweave.core.request.OutputSpec;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.AdmissionRejectedException;
import dev.stepweave.core.runtime.CostLimitExceededException;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.GenerationResult;
import dev.stepweave.core.runtime.ProgramCheckpoint;
import dev.stepweave.core.runtime.RequestHandle;
import dev.stepweave.core.runtime.RequestOptions;
import dev.stepweave.server.store.ArtifactRow;
import dev.stepweave.server.store.ArtifactState;
import dev.stepweave.server.store.JobRow;
import dev.stepweave.server.store.JobStore;
import dev.stepweave.server.store.StoreException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
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
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * The jobs of one server: admission (pending limit, drain), submission to the engine, writing each
 * finished output into the artifact directory, and the video jobs the API can see — those this
 * process runs, and through the {@link JobStore} every job it or another replica ran before.
 *
 * <p>A video job's row is written before the engine sees it and follows every change of status or
 * progress; its checkpoints go to the artifact directory ({@link CheckpointFiles}). After a restart
 * {@link #recover} resumes what was running (docs/server.md, "Restarts").
 */
final class Jobs implements AutoCloseable {
  private final Engine engine;
  private final ArtifactStore store;
  private final ServerConfig limits;
  private final JobStore rows;
  private final StoreConfig storeConfig;
  private final CheckpointFiles checkpoints;
  private final Map<String, Job> videos = new ConcurrentHashMap<>();

  /** Jobs deleted while unfinished: gone for clients at once, row and file removed once stopped. */
  private final Set<String> deleting = ConcurrentHashMap.newKeySet();

  private final Map<String, Integer> downloads = new HashMap<>();
  private final AtomicLong storeFailures = new AtomicLong();
  private volatile long artifactBytes;
  private final Set<Job> unfinished = ConcurrentHashMap.newKeySet();
  private final AtomicInteger pending = new AtomicInteger();
  private final AtomicLong sequence = new AtomicLong();
  private final AtomicLong removedArtifacts = new AtomicLong();
  private final AtomicLong refusedBusy = new AtomicLong();
  private final AtomicLong refusedDraining = new AtomicLong();
  private final AtomicLong refusedTenant = new AtomicLong();
  private final int ownerMaxPending;
  private final Map<String, AtomicInteger> pendingByOwner = new ConcurrentHashMap<>();
  private volatile boolean draining;
  private volatile boolean closed;
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

  // Row writes leave the threads that cause them (the engine's, the encoder's) and keep their
  // order: each writes the job as it is when the write runs, so a late one never goes back.
  private final ExecutorService rowWriter =
      Executors.newSingleThreadExecutor(
          r -> {
            Thread t = new Thread(r, "stepweave-store");
            t.setDaemon(true);
            return t;
          });

  /**
   * @param ownerMaxPending jobs one key may have queued or running (the anonymous owner "" of a
   *     server without keys has only the server's limit)
   */
  Jobs(
      Engine engine,
      ArtifactStore store,
      ServerConfig limits,
      JobStore rows,
      StoreConfig storeConfig,
      int ownerMaxPending) {
    this.engine = engine;
    this.store = store;
    this.limits = limits;
    this.rows = rows;
    this.storeConfig = storeConfig;
    this.checkpoints = new CheckpointFiles(store, storeConfig.checkpointInterval());
    this.ownerMaxPending = ownerMaxPending;
  }

  JobStore rows() {
    return rows;
  }

  CheckpointFiles checkpoints() {
    return checkpoints;
  }

  /** Bytes of this replica's videos on disk, as of the last retention sweep. */
  long artifactBytes() {
    return artifactBytes;
  }

  /** Videos removed by retention (TTL or quota) since the start. */
  long removedArtifacts() {
    return removedArtifacts.get();
  }

  /** Writes to the job store that failed (the job went on; its row may be stale). */
  long storeFailures() {
    return storeFailures.get();
  }

  /** This replica's name in the store. */
  String replicaId() {
    return storeConfig.replicaId();
  }

  /** Whether a drain has begun. */
  boolean draining() {
    return draining;
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

  /**
   * Stores and submits a video job. {@code form} is what the client sent and {@code g} what it
   * means; the row keeps the form with the seed as drawn, so that a restart runs the same request.
   *
   * @param owner the tenant id of the key that makes it ("" when the server has no keys)
   */
  Job submitVideo(FormFields.Form form, Settings.Generation g, String owner) {
    Runnable released = admit(owner);
    String id = JobIds.next(JobIds.VIDEO);
    Instant now = Instant.now();
    long seq = nextSequence(now);
    JobRow row =
        new JobRow(
            id,
            seq,
            ownerColumn(owner),
            storeConfig.replicaId(),
            JobStatus.QUEUED.wireName(),
            0,
            null,
            null,
            now,
            null,
            null,
            RequestJson.write(form, g),
            null);
    try {
      rows.insert(row, RequestJson.upload(form));
    } catch (RuntimeException e) {
      released.run();
      throw e;
    }
    try {
      return startVideo(row, g, null, released);
    } catch (RuntimeException e) {
      rows.delete(id);
      throw e;
    }
  }

  Job submitImage(Settings.Generation g, String owner) {
    Runnable released = admit(owner);
    String id = JobIds.next(JobIds.IMAGE);
    Instant now = Instant.now();
    return submit(id, nextSequence(now), now, null, owner, g, null, null, released);
  }

  /** Epoch microseconds, strictly increasing in this process: the order jobs are listed in. */
  private long nextSequence(Instant now) {
    long micros = now.getEpochSecond() * 1_000_000 + now.getNano() / 1000;
    return sequence.accumulateAndGet(micros, (last, t) -> Math.max(last + 1, t));
  }

  private Job startVideo(
      JobRow row, Settings.Generation g, ProgramCheckpoint from, Runnable released) {
    CheckpointFiles.Sink sink = checkpoints.sink(row.id());
    Job job =
        submit(
            row.id(),
            row.sequence(),
            row.createdAt(),
            row.startedAt(),
            Job.owner(row),
            g,
            from,
            sink,
            released);
    videos.put(job.id(), job);
    job.onChange(this::persist);
    persist(job);
    return job;
  }

  /**
   * Reconciles the store with the artifact directory after a start, for this replica's jobs: a
   * completed job keeps its video if the file is there with its indexed size, else its index entry
   * is marked missing; an unfinished job resumes from its checkpoint file, or from the start if it
   * never ran a step, and is otherwise failed with {@code interrupted}. Files of ours that no row
   * accounts for — videos, images, checkpoints, and temporary files of interrupted writes — are
   * removed: without their row nothing can list, serve or delete them.
   *
   * @param settings how the API reads a request (the model aliases included), to read the stored
   *     ones again
   * @return what it did
   */
  Recovery recover(Settings settings) throws IOException {
    java.util.Set<Path> keep = new java.util.HashSet<>();
    int kept = 0;
    int missing = 0;
    int resumed = 0;
    int restarted = 0;
    int interrupted = 0;
    for (JobRow row : rows.jobsOf(storeConfig.replicaId()).reversed()) {
      JobStatus status = JobStatus.fromWire(row.status());
      if (status == JobStatus.COMPLETED) {
        Path file = store.videoFile(row.id());
        var artifact = rows.artifact(row.id());
        if (artifact.isPresent() && artifact.get().state() == ArtifactState.PRESENT) {
          if (Files.isRegularFile(file) && Files.size(file) == artifact.get().bytes()) {
            keep.add(file);
            kept++;
          } else {
            rows.artifactGone(row.id(), ArtifactState.MISSING);
            missing++;
          }
        }
      } else if (!status.isTerminal()) {
        Path cp = store.checkpointFile(row.id());
        boolean hasCheckpoint = Files.isRegularFile(cp);
        if (!hasCheckpoint && row.startedAt() != null) {
          interrupt(row, "the server stopped while the job ran, before any checkpoint was written");
          interrupted++;
          continue;
        }
        try {
          ProgramCheckpoint from = hasCheckpoint ? ProgramCheckpoint.read(cp) : null;
          Settings.Generation g = RequestJson.read(row, rows.input(row.id()), settings);
          // Counted like an admitted job, limits aside; a refused submit gives it back itself.
          startVideo(row, g, from, hold(Job.owner(row)));
          keep.add(cp);
          if (hasCheckpoint) {
            resumed++;
          } else {
            restarted++;
          }
        } catch (RuntimeException e) {
          interrupt(row, "the server restarted and could not resume the job: " + firstLine(e));
          interrupted++;
        }
      }
    }
    int removed = 0;
    for (Path f : store.list()) {
      if (!keep.contains(f) && ours(f.getFileName().toString())) {
        Files.deleteIfExists(f);
        removed++;
      }
    }
    sweep();
    return new Recovery(kept, missing, resumed, restarted, interrupted, removed);
  }

  /**
   * What a start's reconciliation did.
   *
   * @param kept completed videos whose files are there
   * @param missing completed videos whose files were gone (their index entries now say so)
   * @param resumed running jobs resumed from their checkpoint files
   * @param restarted queued jobs that had not started, submitted again
   * @param interrupted unfinished jobs failed with {@code interrupted}
   * @param removedFiles files of ours no row accounted for, removed
   */
  record Recovery(
      int kept, int missing, int resumed, int restarted, int interrupted, int removedFiles) {}

  /** Job files and the temporary files of interrupted checkpoint writes; never anything else. */
  private static boolean ours(String name) {
    if (name.startsWith(".checkpoint-") && name.endsWith(".tmp")) {
      return true;
    }
    int dot = name.lastIndexOf('.');
    if (dot < 0) {
      return false;
    }
    String ext = name.substring(dot);
    return (ext.equals(".mp4") || ext.equals(".png") || ext.equals(ArtifactStore.CHECKPOINT))
        && JobIds.isValid(name.substring(0, dot));
  }

  private void interrupt(JobRow row, String message) {
    rows.update(
        new JobRow(
            row.id(),
            row.sequence(),
            row.owner(),
            row.replica(),
            JobStatus.FAILED.wireName(),
            row.progress(),
            "interrupted",
            message,
            row.createdAt(),
            row.startedAt(),
            Instant.now(),
            row.request(),
            row.view()));
  }

  /** Writes the job's row as it is when the write runs (on the store's thread). */
  private void persist(Job job) {
    rowWriter.execute(() -> guarded(() -> rows.update(row(job))));
  }

  private void guarded(Runnable write) {
    try {
      write.run();
    } catch (RuntimeException e) {
      storeFailures.incrementAndGet();
      System.err.println("stepweave: job store: " + firstLine(e));
    }
  }

  private JobRow row(Job job) {
    return new JobRow(
        job.id(),
        job.sequence(),
        ownerColumn(job.owner()),
        storeConfig.replicaId(),
        job.status().wireName(),
        job.progress(),
        job.errorCode(),
        job.error(),
        job.createdAt(),
        job.startedAt(),
        job.completedAt(),
        "",
        ApiJson.video(job).toString());
  }

  /** Jobs queued or running by owner. */
  Map<String, Integer> pendingByOwner() {
    Map<String, Integer> out = new java.util.TreeMap<>();
    pendingByOwner.forEach((owner, n) -> out.put(owner, n.get()));
    return out;
  }

  /** The store's owner column: the tenant id, or null for the anonymous owner "" (no keys). */
  private static String ownerColumn(String owner) {
    return owner.isEmpty() ? null : owner;
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

  /**
   * A video's file while a client downloads it: retention never removes it meanwhile, and a
   * download that delivered the whole file is recorded when it ends.
   */
  final class Download implements AutoCloseable {
    private final String jobId;
    private final Path file;

    private Download(String jobId, Path file) {
      this.jobId = jobId;
      this.file = file;
    }

    private boolean delivered;

    Path file() {
      return file;
    }

    /** The whole file reached the client: the download counts as a fetch. */
    void delivered() {
      delivered = true;
    }

    @Override
    public void close() {
      Instant at = Instant.now();
      synchronized (downloads) {
        downloads.computeIfPresent(jobId, (k, n) -> n == 1 ? null : n - 1);
        if (delivered) {
          rowWriter.execute(() -> guarded(() -> rows.fetched(jobId, at)));
        }
      }
    }
  }

  /**
   * Opens a completed video for download.
   *
   * @throws ApiException 410 when retention removed it or it was gone at the start, 409 when
   *     another replica holds it
   */
  Download download(Job job) {
    Path file = store.videoFile(job.id());
    synchronized (downloads) {
      var artifact = rows.artifact(job.id());
      if (artifact.isPresent() && artifact.get().state() != ArtifactState.PRESENT) {
        ArtifactState state = artifact.get().state();
        throw new ApiException(
            410,
            "invalid_request_error",
            null,
            "video_" + state.name().toLowerCase(java.util.Locale.ROOT),
            "the video of "
                + job.id()
                + (state == ArtifactState.EXPIRED
                    ? " was removed by the server's retention policy"
                    : " was missing from disk when the server started"));
      }
      if (!Files.isRegularFile(file)) {
        var row = rows.job(job.id());
        if (row.isPresent() && !row.get().replica().equals(storeConfig.replicaId())) {
          throw ApiException.conflict(
              "video_on_other_replica",
              "video " + job.id() + " is held by replica '" + row.get().replica() + "'");
        }
      }
      downloads.merge(job.id(), 1, Integer::sum);
    }
    return new Download(job.id(), file);
  }

  /**
   * Removes expired and over-quota videos of this replica, oldest first, skipping any a client is
   * downloading; updates {@link #artifactBytes}.
   */
  void sweep() {
    List<ArtifactRow> present = rows.presentArtifacts(storeConfig.replicaId());
    long total = present.stream().mapToLong(ArtifactRow::bytes).sum();
    Instant now = Instant.now();
    Duration ttl = storeConfig.artifactTtl();
    long max = storeConfig.maxArtifactBytes();
    for (ArtifactRow a : present) {
      boolean expired = ttl != null && !a.createdAt().plus(ttl).isAfter(now);
      boolean over = max > 0 && total > max;
      if (!expired && !over) {
        continue;
      }
      synchronized (downloads) {
        if (downloads.containsKey(a.jobId())) {
          continue;
        }
        try {
          Files.deleteIfExists(store.videoFile(a.jobId()));
        } catch (IOException e) {
          continue; // tried again at the next sweep
        }
        rows.artifactGone(a.jobId(), ArtifactState.EXPIRED);
      }
      total -= a.bytes();
      removedArtifacts.incrementAndGet();
    }
    artifactBytes = total;
  }

  /** {@link #sweep} for the retention timer: a failure is counted and tried again next time. */
  void sweepQuietly() {
    guarded(this::sweep);
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
    // Asked before the lookups: a deletion takes the job out of the map and the store before it
    // leaves this set, so a lookup that finds the set without the id finds the job gone too.
    if (deleting.contains(id)) {
      throw ApiException.notFound("no video with id '" + id + "'");
    }
    Job job = null;
    if (JobIds.isValid(id) && id.startsWith(JobIds.VIDEO)) {
      job = videos.get(id);
      if (job == null) {
        job = rows.job(id).map(this::stored).orElse(null);
      }
    }
    if (job == null || !job.owner().equals(owner)) {
      throw ApiException.notFound("no video with id '" + id + "'");
    }
    return job;
  }

  /** The video jobs of {@code owner} in the store (those of every replica), newest first. */
  List<Job> videos(String owner) {
    Set<String> hidden = Set.copyOf(deleting); // before the read: see video()
    return rows.jobsOwnedBy(ownerColumn(owner)).stream()
        .filter(r -> !hidden.contains(r.id()))
        .map(r -> videos.getOrDefault(r.id(), stored(r)))
        .toList();
  }

  private Job stored(JobRow row) {
    ObjectNode view;
    try {
      view =
          row.view() == null
              ? Json.MAPPER.createObjectNode().put("id", row.id()).put("object", "video")
              : (ObjectNode) Json.MAPPER.readTree(row.view());
    } catch (IOException e) {
      throw new IllegalStateException("the stored object of " + row.id() + " is not JSON", e);
    }
    return Job.stored(row, view);
  }

  /**
   * OpenAI's delete of a job still queued or running: cancels it (it stops at its next step
   * boundary) and hides it from every lookup at once; its row, checkpoint and any file it wrote go
   * once it has stopped.
   *
   * @return false when the job runs on another replica (nothing changed)
   */
  boolean deleteUnfinished(Job job) {
    if (!job.cancel()) {
      return false;
    }
    deleting.add(job.id());
    // On the artifact writer, where the job's own output is written (so its file is there to
    // remove): not the row writer delete() waits on, nor the common pool, whose one worker on a
    // small machine delivers every request's events.
    job.finished()
        .whenCompleteAsync(
            (result, failure) -> {
              try {
                delete(job);
              } catch (IOException | RuntimeException e) {
                storeFailures.incrementAndGet();
                System.err.println("stepweave: deleting " + job.id() + ": " + firstLine(e));
              } finally {
                deleting.remove(job.id());
              }
            },
            writer);
    return true;
  }

  /**
   * Forgets a finished video: its row, its index entry and its file (its checkpoint went when it
   * ended).
   */
  void delete(Job job) throws IOException {
    // The row goes first, then the live job: a lookup between the two still finds the live one,
    // never a stored row of a job this process no longer holds.
    try {
      rowWriter.submit(() -> rows.delete(job.id())).get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while deleting " + job.id(), e);
    } catch (ExecutionException e) {
      throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e);
    }
    videos.remove(job.id());
    // Its checkpoint went when it ended (finish); a stored job's belongs to its own replica.
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
    long deadline = System.nanoTime() + timeout.toNanos();
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
      // What the engine let go still writes its output or its checkpoint: quick, but not bounded
      // by a short drain timeout.
      long writeMillis = Math.max(timeout.toMillis(), 10_000);
      CompletableFuture.allOf(all).get(writeMillis, TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    } catch (ExecutionException e) {
      throw new IllegalStateException("a job's finish future failed", e);
    }
    if (storeConfig.drainAwaitsDownloads()) {
      awaitDownloads(deadline);
    }
    return clean;
  }

  /** Until every video this replica holds has been downloaded once, or the deadline. */
  private void awaitDownloads(long deadline) {
    try {
      rowWriter.submit(() -> {}).get(); // the last completions are in the store
      // A stop ends the wait too: an admin drain's thread must not outlive the store.
      while (!closed
          && System.nanoTime() < deadline
          && rows.presentArtifacts(storeConfig.replicaId()).stream()
              .anyMatch(a -> a.lastFetchedAt() == null)) {
        Thread.sleep(100);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException e) {
      throw new IllegalStateException("the store's writer failed", e);
    } catch (StoreException | RejectedExecutionException e) {
      if (!closed) {
        throw e;
      } // the server stopped meanwhile: nothing is left to wait for
    }
  }

  /**
   * Refuses a new job while draining or when the server's or the owner's pending limit is reached;
   * else counts it.
   *
   * @return gives the job's pending slots back (once it finished, or when its submit is refused)
   */
  private Runnable admit(String owner) {
    if (!accepting()) {
      refusedDraining.incrementAndGet();
      throw new ApiException(
          503,
          "server_error",
          null,
          "not_accepting",
          "the server is draining and admits no new jobs");
    }
    Runnable released = hold(owner);
    if (pendingByOwner.get(owner).get() > ownerMaxPending && !owner.isEmpty()) {
      released.run();
      refusedTenant.incrementAndGet();
      throw new ApiException(
          429,
          "rate_limit_exceeded",
          null,
          "tenant_queue_full",
          "this key already has " + ownerMaxPending + " jobs queued or running; retry later");
    }
    if (pending.get() > limits.maxPendingJobs()) {
      released.run();
      refusedBusy.incrementAndGet();
      throw new ApiException(
          429,
          "rate_limit_exceeded",
          null,
          "queue_full",
          limits.maxPendingJobs() + " jobs are already queued or running; retry later");
    }
    return released;
  }

  /** Counts a job as pending, in all and for its owner; the runnable gives both back. */
  private Runnable hold(String owner) {
    AtomicInteger mine = pendingByOwner.computeIfAbsent(owner, o -> new AtomicInteger());
    mine.incrementAndGet();
    pending.incrementAndGet();
    return () -> {
      pending.decrementAndGet();
      mine.decrementAndGet();
    };
  }

  /**
   * Submits (or resumes from {@code from}) a job already counted by {@link #admit} or {@link
   * #hold}; {@code released} gives its count back.
   */
  private Job submit(
      String id,
      long seq,
      Instant createdAt,
      Instant startedAt,
      String owner,
      Settings.Generation g,
      ProgramCheckpoint from,
      CheckpointFiles.Sink sink,
      Runnable released) {
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
            .output(new OutputSpec(false, g.previewEvery()))
            .build();
    RequestHandle handle;
    List<ResolvedAdapter> adapters;
    adapterTable.readLock().lock();
    try {
      RequestOptions options = RequestOptions.DEFAULT.withSink(sink);
      handle =
          from == null
              ? engine.submitWith(request, options)
              : engine.resumeWith(request, from, options);
      // What the engine resolved under this same lock, so this cannot refuse.
      adapters = engine.extensions().adapters().resolve(request);
    } catch (InvalidRequestException e) {
      released.run();
      throw ApiException.badRequest(e.field().map(Jobs::wireField).orElse(null), firstLine(e));
    } catch (RecipeRefusedException e) {
      released.run();
      throw new ApiException(400, "invalid_request_error", null, "recipe_refused", e.getMessage());
    } catch (CostLimitExceededException e) {
      released.run();
      throw new ApiException(
          400, "invalid_request_error", null, "exceeds_cost_limit", e.getMessage());
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
            seq,
            createdAt,
            startedAt,
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
    // The sink itself, not a lookup by id: a quick job may end before its caller records it.
    handle.result().whenCompleteAsync((result, error) -> finish(job, sink, result, error), writer);
    return job;
  }

  private void finish(
      Job job, CheckpointFiles.Sink sink, GenerationResult result, Throwable error) {
    Throwable cause = error instanceof CompletionException c ? c.getCause() : error;
    if (cause instanceof CancelledException && draining && !job.cancelRequested()) {
      // The drain's timeout stopped it: keep its newest state and its row as they are, so that
      // the next start resumes it.
      if (sink != null) {
        sink.flush();
      }
      job.suspended();
      return;
    }
    // Queued before the job reads as ended: whoever saw it end and then stops the server finds
    // the file gone once close() returned (the checkpoint thread runs what was queued).
    if (sink != null) {
      sink.discard();
    }
    if (cause instanceof CancelledException) {
      job.cancelled();
    } else if (cause != null) {
      job.fail(firstLine(cause));
    } else {
      try {
        if (job.id().startsWith(JobIds.IMAGE)) {
          store.writeImage(job.id(), result.artifact(Artifact.ImageArtifact.class).pixels());
          job.complete(result.loopTimings(), result.report());
        } else {
          Artifact.VideoArtifact v = result.artifact(Artifact.VideoArtifact.class);
          Path file = store.videoFile(job.id());
          store.writeVideo(job.id(), v.frames(), v.fps());
          ArtifactRow artifact =
              new ArtifactRow(
                  job.id(),
                  file.getFileName().toString(),
                  Files.size(file),
                  ArtifactStore.sha256(file),
                  Instant.now(),
                  null,
                  ArtifactState.PRESENT);
          if (storeConfig.artifactTtl() != null) {
            job.expiresAt(artifact.createdAt().plus(storeConfig.artifactTtl()));
          }
          job.onChange(j -> {}); // the completion below writes the row with its artifact
          synchronized (downloads) { // a download's record is queued after the completion
            job.complete(result.loopTimings(), result.report());
            rowWriter.execute(
                () -> {
                  guarded(() -> rows.complete(row(job), artifact));
                  guarded(this::sweep);
                });
          }
        }
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
    closed = true;
    writer.shutdownNow();
    checkpoints.close();
    rowWriter.shutdown();
    try {
      rowWriter.awaitTermination(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}

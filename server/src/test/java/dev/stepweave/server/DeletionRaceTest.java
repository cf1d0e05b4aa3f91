package dev.stepweave.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.EngineConfig;
import dev.stepweave.server.store.ArtifactRow;
import dev.stepweave.server.store.ArtifactState;
import dev.stepweave.server.store.JobInput;
import dev.stepweave.server.store.JobRow;
import dev.stepweave.server.store.JobStore;
import dev.stepweave.server.store.JobStores;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A lookup racing the deletion of a running video, forced into its worst interleaving: the lookup
 * reads the store while the deletion is under way and is answered only after the deletion ended. It
 * must still find the video gone (404), never a stored row of a job this process let go (which the
 * API answered 409 "on another replica", or 200 for a second delete).
 */
@Timeout(60)
class DeletionRaceTest {
  @TempDir Path tmp;
  Engine engine;
  GatedStore rows;
  Jobs jobs;

  @BeforeEach
  void start() throws java.io.IOException {
    PatternModel model = new PatternModel();
    engine = new Engine(model, EngineConfig.defaults());
    ArtifactStore files = new ArtifactStore(tmp);
    rows = new GatedStore(JobStores.open(null, tmp));
    jobs = new Jobs(engine, files, ServerConfig.defaults(), rows, StoreConfig.defaults(), 100);
  }

  @AfterEach
  void stop() {
    rows.releaseAll();
    jobs.close();
    rows.close();
    engine.close();
  }

  @Test
  void aLookupThatReadTheStoreDuringTheDeletionStillFindsTheVideoGone() throws Exception {
    String id = deletedWhileRunning();
    assertNotFound(() -> jobs.video(id, ""));
  }

  @Test
  void aListThatReadTheStoreDuringTheDeletionLeavesTheVideoOut() throws Exception {
    String id = deletedWhileRunning();
    List<String> listed =
        raced(() -> jobs.videos("").stream().map(Job::id).toList()).get(30, TimeUnit.SECONDS);
    assertFalse(listed.contains(id), listed.toString());
  }

  /** A running video whose DELETE was accepted and whose deletion now waits in the store. */
  private String deletedWhileRunning() throws Exception {
    Settings settings = new Settings(engine.model().card(), ServerConfig.defaults(), Set.of());
    FormFields.Form form =
        new FormFields.Form(Map.of("prompt", "slow river", "num_inference_steps", "100"), Map.of());
    Job job = jobs.submitVideo(form, settings.video(form), "");
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (job.progress() == 0 && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    assertTrue(job.progress() > 0, "the job runs");
    assertTrue(jobs.deleteUnfinished(job));
    assertTrue(rows.deleteEntered.await(20, TimeUnit.SECONDS), "the deletion reached the store");
    return job.id();
  }

  /**
   * Runs {@code lookup} with its store reads held until the deletion has finished (the row gone,
   * and time for the deleting thread to end its bookkeeping), then answers.
   */
  private <T> CompletableFuture<T> raced(Supplier<T> lookup) throws Exception {
    rows.holdReads();
    // Its own thread, so that nothing the server runs waits behind it.
    CompletableFuture<T> answer = new CompletableFuture<>();
    Thread.ofPlatform()
        .name("lookup")
        .start(
            () -> {
              try {
                answer.complete(lookup.get());
              } catch (RuntimeException e) {
                answer.completeExceptionally(e);
              }
            });
    // Either the lookup read the store and is held there, or it answered without reading.
    while (!answer.isDone() && rows.heldReads.getCount() > 0) {
      Thread.sleep(5);
    }
    rows.allowDelete.countDown();
    assertTrue(rows.deleteDone.await(20, TimeUnit.SECONDS));
    Thread.sleep(200); // the deleting thread's bookkeeping after the store call
    rows.releaseReads.countDown();
    return answer;
  }

  private void assertNotFound(Supplier<Object> lookup) throws Exception {
    CompletableFuture<Object> answer = raced(lookup);
    try {
      Object found = answer.get(30, TimeUnit.SECONDS);
      throw new AssertionError("found " + found + " after its deletion");
    } catch (java.util.concurrent.ExecutionException e) {
      ApiException api = (ApiException) e.getCause();
      assertEquals(404, api.status(), api.getMessage());
    }
  }

  /**
   * The embedded store with two gates: a delete waits until allowed, and reads, once held, wait
   * after reading until released (so that they answer with what they read before).
   */
  static final class GatedStore implements JobStore {
    final JobStore inner;
    final CountDownLatch deleteEntered = new CountDownLatch(1);
    final CountDownLatch allowDelete = new CountDownLatch(1);
    final CountDownLatch deleteDone = new CountDownLatch(1);
    final CountDownLatch releaseReads = new CountDownLatch(1);
    volatile CountDownLatch heldReads = new CountDownLatch(0);
    private volatile boolean holding;

    GatedStore(JobStore inner) {
      this.inner = inner;
    }

    void holdReads() {
      heldReads = new CountDownLatch(1);
      holding = true;
    }

    void releaseAll() {
      allowDelete.countDown();
      releaseReads.countDown();
    }

    private <T> T read(T value) {
      if (holding && !Thread.currentThread().getName().startsWith("stepweave-")) {
        heldReads.countDown();
        await(releaseReads);
      }
      return value;
    }

    private static void await(CountDownLatch latch) {
      try {
        latch.await(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    @Override
    public void delete(String jobId) {
      deleteEntered.countDown();
      await(allowDelete);
      inner.delete(jobId);
      deleteDone.countDown();
    }

    @Override
    public Optional<JobRow> job(String id) {
      return read(inner.job(id));
    }

    @Override
    public List<JobRow> jobsOwnedBy(String owner) {
      return read(inner.jobsOwnedBy(owner));
    }

    @Override
    public int schemaVersion() {
      return inner.schemaVersion();
    }

    @Override
    public void insert(JobRow job, JobInput input) {
      inner.insert(job, input);
    }

    @Override
    public void update(JobRow job) {
      inner.update(job);
    }

    @Override
    public void complete(JobRow job, ArtifactRow artifact) {
      inner.complete(job, artifact);
    }

    @Override
    public Optional<JobInput> input(String jobId) {
      return inner.input(jobId);
    }

    @Override
    public List<JobRow> jobs() {
      return inner.jobs();
    }

    @Override
    public List<JobRow> jobsOf(String replica) {
      return inner.jobsOf(replica);
    }

    @Override
    public Optional<ArtifactRow> artifact(String jobId) {
      return inner.artifact(jobId);
    }

    @Override
    public List<ArtifactRow> presentArtifacts(String replica) {
      return inner.presentArtifacts(replica);
    }

    @Override
    public void fetched(String jobId, Instant at) {
      inner.fetched(jobId, at);
    }

    @Override
    public void artifactGone(String jobId, ArtifactState state) {
      inner.artifactGone(jobId, state);
    }

    @Override
    public void close() {
      inner.close();
    }
  }
}

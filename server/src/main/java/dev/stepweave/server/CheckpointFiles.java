package dev.stepweave.server;

import dev.stepweave.core.runtime.CheckpointSink;
import dev.stepweave.core.runtime.ProgramCheckpoint;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Writes running jobs' checkpoints to the artifact directory, so that a restart resumes them.
 *
 * <p>The engine hands a job's sink where the run stands after every step (in host memory: on the
 * CPU a capture copies nothing). The sink keeps the newest and, once {@code interval} has passed
 * since the job's last file, has it written — on this class's one thread, never the scheduler's, so
 * a write never delays a step. A slow disk only makes files rarer: a job has at most one write
 * queued, which takes the newest state when it runs. Every file operation of a job (write, flush,
 * discard) runs on that thread in order, so a discarded job's file cannot reappear.
 */
final class CheckpointFiles implements AutoCloseable {
  private final ArtifactStore files;
  private final Duration interval;
  private final ExecutorService io =
      Executors.newSingleThreadExecutor(
          r -> {
            Thread t = new Thread(r, "stepweave-checkpoints");
            t.setDaemon(true);
            return t;
          });
  private final AtomicLong written = new AtomicLong();
  private final AtomicLong writeNanos = new AtomicLong();
  private final AtomicLong writtenBytes = new AtomicLong();

  CheckpointFiles(ArtifactStore files, Duration interval) {
    this.files = files;
    this.interval = interval;
  }

  /** The sink of one job's run. */
  Sink sink(String jobId) {
    return new Sink(jobId);
  }

  /** Checkpoint files written so far, their bytes and the time writing them took. */
  long filesWritten() {
    return written.get();
  }

  long bytesWritten() {
    return writtenBytes.get();
  }

  Duration writeTime() {
    return Duration.ofNanos(writeNanos.get());
  }

  /** Runs the file operations already queued (a discard among them), for at most 10 s. */
  @Override
  public void close() {
    io.shutdown();
    try {
      io.awaitTermination(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** One job's checkpoints. */
  final class Sink implements CheckpointSink {
    private final String jobId;
    private final AtomicReference<ProgramCheckpoint> newest = new AtomicReference<>();
    private volatile ProgramCheckpoint onDisk;
    private volatile long lastWriteNanos = System.nanoTime();
    private volatile boolean queued;

    private Sink(String jobId) {
      this.jobId = jobId;
    }

    @Override
    public void accept(ProgramCheckpoint checkpoint) {
      newest.set(checkpoint);
      if (!queued && System.nanoTime() - lastWriteNanos >= interval.toNanos()) {
        queued = true;
        io.execute(this::writeNewest);
      }
    }

    /** Writes the newest state now, if it is not on disk yet, and waits for it. */
    void flush() {
      await(io.submit(this::writeNewest));
    }

    /**
     * Removes the job's file (it finished, or was cancelled or deleted) once pending writes ran.
     */
    void discard() {
      try {
        io.execute(
            () -> {
              newest.set(null);
              try {
                Files.deleteIfExists(files.checkpointFile(jobId));
              } catch (IOException e) {
                // Left for the next start's reconciliation, which removes checkpoints of ended
                // jobs.
              }
            });
      } catch (RejectedExecutionException e) {
        // The server stopped: the next start's reconciliation removes it, as above.
      }
    }

    private void writeNewest() {
      queued = false;
      ProgramCheckpoint cp = newest.get();
      if (cp == null || cp == onDisk) {
        return;
      }
      Path file = files.checkpointFile(jobId);
      long t0 = System.nanoTime();
      cp.write(file);
      long t1 = System.nanoTime();
      lastWriteNanos = t1;
      onDisk = cp;
      written.incrementAndGet();
      writeNanos.addAndGet(t1 - t0);
      try {
        writtenBytes.addAndGet(Files.size(file));
      } catch (IOException e) {
        // Only the statistic misses it.
      }
    }
  }

  private static void await(java.util.concurrent.Future<?> f) {
    try {
      f.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException e) {
      throw new IllegalStateException("checkpoint write failed: " + e.getCause().getMessage(), e);
    }
  }
}

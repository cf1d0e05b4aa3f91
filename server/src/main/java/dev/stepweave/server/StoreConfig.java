package dev.stepweave.server;

import dev.stepweave.server.store.JobStores;
import java.time.Duration;
import java.util.Objects;

/**
 * Where a server keeps its jobs and how long it keeps their outputs (docs/server.md, "The job
 * store").
 *
 * @param databaseUrl a {@code jdbc:postgresql://} URL several replicas share, or null for the
 *     embedded SQLite database in the artifact directory
 * @param replicaId this replica's name in a shared store: the jobs it runs and the files it holds
 *     are marked with it, and a restart reconciles only those
 * @param checkpointInterval the least time between two checkpoint files of one running job (each
 *     written at a step boundary); zero writes one after every step
 * @param artifactTtl how long a finished video is kept after it was written, or null for ever
 * @param maxArtifactBytes the most bytes of videos kept at once (oldest removed first), or 0 for no
 *     limit
 * @param drainAwaitsDownloads whether a drain, once the jobs are done, keeps serving reads until
 *     every finished video has been downloaded once (bounded by the drain timeout)
 */
public record StoreConfig(
    String databaseUrl,
    String replicaId,
    Duration checkpointInterval,
    Duration artifactTtl,
    long maxArtifactBytes,
    boolean drainAwaitsDownloads) {
  /** The replica name of a server that shares its store with no other. */
  public static final String LOCAL = "local";

  public StoreConfig {
    Objects.requireNonNull(replicaId, "replicaId");
    Objects.requireNonNull(checkpointInterval, "checkpointInterval");
    if (databaseUrl != null) {
      JobStores.checkUrl(databaseUrl);
    }
    if (!replicaId.matches("[A-Za-z0-9._-]{1,64}")) {
      throw new IllegalArgumentException(
          "--replica-id must be 1-64 letters, digits, '.', '_' or '-', got '" + replicaId + "'");
    }
    if (checkpointInterval.isNegative()) {
      throw new IllegalArgumentException(
          "--checkpoint-interval must be >= 0, got " + checkpointInterval);
    }
    if (artifactTtl != null && !artifactTtl.isPositive()) {
      throw new IllegalArgumentException("--artifact-ttl must be > 0, got " + artifactTtl);
    }
    if (maxArtifactBytes < 0) {
      throw new IllegalArgumentException(
          "--max-artifact-bytes must be >= 0, got " + maxArtifactBytes);
    }
  }

  /**
   * SQLite in the artifact directory, a checkpoint every 5 s of a job's steps, outputs kept, a
   * drain that ends with the jobs.
   */
  public static StoreConfig defaults() {
    return new StoreConfig(null, LOCAL, Duration.ofSeconds(5), null, 0, false);
  }

  public StoreConfig withDatabaseUrl(String url) {
    return new StoreConfig(
        url, replicaId, checkpointInterval, artifactTtl, maxArtifactBytes, drainAwaitsDownloads);
  }

  public StoreConfig withReplicaId(String id) {
    return new StoreConfig(
        databaseUrl, id, checkpointInterval, artifactTtl, maxArtifactBytes, drainAwaitsDownloads);
  }

  public StoreConfig withCheckpointInterval(Duration d) {
    return new StoreConfig(
        databaseUrl, replicaId, d, artifactTtl, maxArtifactBytes, drainAwaitsDownloads);
  }

  public StoreConfig withArtifactTtl(Duration ttl) {
    return new StoreConfig(
        databaseUrl, replicaId, checkpointInterval, ttl, maxArtifactBytes, drainAwaitsDownloads);
  }

  public StoreConfig withMaxArtifactBytes(long bytes) {
    return new StoreConfig(
        databaseUrl, replicaId, checkpointInterval, artifactTtl, bytes, drainAwaitsDownloads);
  }

  public StoreConfig withDrainAwaitingDownloads(boolean await) {
    return new StoreConfig(
        databaseUrl, replicaId, checkpointInterval, artifactTtl, maxArtifactBytes, await);
  }
}

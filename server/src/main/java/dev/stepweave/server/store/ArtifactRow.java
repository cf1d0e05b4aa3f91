package dev.stepweave.server.store;

import java.time.Instant;

/**
 * One finished output in the artifact index.
 *
 * @param jobId the job it belongs to
 * @param fileName its file's name in the replica's artifact directory
 * @param bytes the file's size
 * @param sha256 the file's content hash (hex)
 * @param createdAt when it was written
 * @param lastFetchedAt when a client last downloaded it, or null when none has
 * @param state whether the file is there
 */
public record ArtifactRow(
    String jobId,
    String fileName,
    long bytes,
    String sha256,
    Instant createdAt,
    Instant lastFetchedAt,
    ArtifactState state) {}

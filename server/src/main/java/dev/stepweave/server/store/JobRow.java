package dev.stepweave.server.store;

import java.time.Instant;
import java.util.Objects;

/**
 * One job as stored.
 *
 * @param id the job id ({@code video_…})
 * @param sequence orders jobs by submission (epoch microseconds, strictly increasing per replica)
 * @param owner the tenant id of the key that made it (Tenant.id, a digest of the key, never the
 *     key); null when the server has no keys
 * @param replica the replica that runs it and holds its files
 * @param status its status as the API spells it ({@code queued}, {@code in_progress}, …)
 * @param progress 0…100
 * @param errorCode the API error code once failed, else null
 * @param errorMessage the error message once failed, else null
 * @param createdAt when it was submitted
 * @param startedAt when its first step ran, or null
 * @param completedAt when it turned terminal, or null
 * @param request what the job was asked for, as JSON: enough to run it again identically
 * @param view the API's object for the job as last written (JSON), what other replicas and a
 *     restarted server show
 */
public record JobRow(
    String id,
    long sequence,
    String owner,
    String replica,
    String status,
    int progress,
    String errorCode,
    String errorMessage,
    Instant createdAt,
    Instant startedAt,
    Instant completedAt,
    String request,
    String view) {
  public JobRow {
    Objects.requireNonNull(id, "id");
    Objects.requireNonNull(replica, "replica");
    Objects.requireNonNull(status, "status");
    Objects.requireNonNull(createdAt, "createdAt");
    Objects.requireNonNull(request, "request");
  }

  public JobRow withStatus(String s, String code, String message, Instant completed) {
    return new JobRow(
        id, sequence, owner, replica, s, progress, code, message, createdAt, startedAt, completed,
        request, view);
  }
}

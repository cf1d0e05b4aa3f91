package dev.stepweave.server.store;

import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * Job metadata and the artifact index of one server, or of several replicas sharing a database.
 * Every method is one transaction; implementations are safe to call from several threads.
 *
 * @throws StoreException from any method when the database fails
 */
public interface JobStore extends AutoCloseable {
  /** The schema version the database is at (always {@link Migrations#CURRENT} once open). */
  int schemaVersion();

  /** Adds a new job, with its uploaded input file when it has one (null otherwise). */
  void insert(JobRow job, JobInput input);

  /** Replaces the mutable columns of a stored job (status, progress, error, times, view). */
  void update(JobRow job);

  /** Marks a job completed and indexes its artifact, in one transaction. */
  void complete(JobRow job, ArtifactRow artifact);

  Optional<JobRow> job(String id);

  Optional<JobInput> input(String jobId);

  /** Every job, newest first. */
  List<JobRow> jobs();

  /** The jobs of one owner (null: those made without a key), newest first. */
  List<JobRow> jobsOwnedBy(String owner);

  /** The jobs one replica runs or ran, newest first. */
  List<JobRow> jobsOf(String replica);

  /** Forgets a job: its row, its input and its artifact's index entry. */
  void delete(String jobId);

  Optional<ArtifactRow> artifact(String jobId);

  /** One replica's artifacts whose file is present, oldest first. */
  List<ArtifactRow> presentArtifacts(String replica);

  /** Records a download of the job's artifact. */
  void fetched(String jobId, Instant at);

  /** Records that the job's artifact file is gone (missing or expired). */
  void artifactGone(String jobId, ArtifactState state);

  @Override
  void close();
}

package dev.stepweave.server.store;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The store over a HikariCP pool of JDBC connections (SQLite or PostgreSQL: the SQL is the same,
 * see {@link Dialect}). Calls are serialised (a server's store traffic is a few small rows per job
 * step, far below what one connection carries); each borrows a connection, which the pool checks
 * before handing it out when it sat idle and replaces when it broke, so a database that restarts or
 * drops a connection is reconnected to. A call whose connection is lost under it (SQLState class
 * 08, or PostgreSQL's 57P01–57P03) is retried once on a fresh one. Times are epoch milliseconds.
 */
final class JdbcJobStore implements JobStore {
  private static final String JOB_COLUMNS =
      "id, seq, owner, replica, status, progress, error_code, error_message, created_at, started_at,"
          + " completed_at, request, view";
  private static final String NEWEST_FIRST = " ORDER BY seq DESC, id DESC";

  private final HikariDataSource pool;
  private final String name;
  private final int version;

  JdbcJobStore(HikariDataSource pool, Dialect dialect, String name, int targetVersion) {
    this.pool = pool;
    this.name = name;
    try (Connection c = pool.getConnection()) {
      dialect.prepare(c);
      this.version = Migrations.migrate(c, dialect, targetVersion);
    } catch (SQLException e) {
      close();
      throw new StoreException("cannot open the job store " + name + ": " + e.getMessage(), e);
    }
  }

  @Override
  public int schemaVersion() {
    return version;
  }

  @Override
  public synchronized void insert(JobRow job, JobInput input) {
    inTransaction(
        "insert job " + job.id(),
        connection -> {
          try (PreparedStatement p =
              connection.prepareStatement(
                  "INSERT INTO jobs (" + JOB_COLUMNS + ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)")) {
            p.setString(1, job.id());
            p.setLong(2, job.sequence());
            p.setString(3, job.owner());
            p.setString(4, job.replica());
            mutable(p, 5, job);
            p.setString(12, job.request());
            p.setString(13, job.view());
            p.executeUpdate();
          }
          if (input != null) {
            try (PreparedStatement p =
                connection.prepareStatement(
                    "INSERT INTO job_inputs (job_id, content_type, file_name, bytes)"
                        + " VALUES (?,?,?,?)")) {
              p.setString(1, job.id());
              p.setString(2, input.contentType());
              p.setString(3, input.fileName());
              p.setBytes(4, input.bytes());
              p.executeUpdate();
            }
          }
        });
  }

  @Override
  public synchronized void update(JobRow job) {
    inTransaction("update job " + job.id(), connection -> updateJob(connection, job));
  }

  @Override
  public synchronized void complete(JobRow job, ArtifactRow a) {
    inTransaction(
        "complete job " + job.id(),
        connection -> {
          updateJob(connection, job);
          try (PreparedStatement p =
              connection.prepareStatement(
                  "INSERT INTO artifacts (job_id, replica, file_name, bytes, sha256, created_at,"
                      + " last_fetched_at, state) VALUES (?,?,?,?,?,?,?,?)"
                      + " ON CONFLICT (job_id) DO UPDATE SET file_name = excluded.file_name,"
                      + " bytes = excluded.bytes, sha256 = excluded.sha256,"
                      + " created_at = excluded.created_at, last_fetched_at = NULL,"
                      + " state = excluded.state")) {
            p.setString(1, a.jobId());
            p.setString(2, job.replica());
            p.setString(3, a.fileName());
            p.setLong(4, a.bytes());
            p.setString(5, a.sha256());
            p.setLong(6, a.createdAt().toEpochMilli());
            time(p, 7, a.lastFetchedAt());
            p.setString(8, a.state().column());
            p.executeUpdate();
          }
        });
  }

  private static void updateJob(Connection connection, JobRow job) throws SQLException {
    try (PreparedStatement p =
        connection.prepareStatement(
            "UPDATE jobs SET status = ?, progress = ?, error_code = ?, error_message = ?,"
                + " created_at = ?, started_at = ?, completed_at = ?, view = ? WHERE id = ?")) {
      mutable(p, 1, job);
      p.setString(8, job.view());
      p.setString(9, job.id());
      if (p.executeUpdate() != 1) {
        throw new SQLException("no job " + job.id());
      }
    }
  }

  /** status … completed_at from {@code first}. */
  private static void mutable(PreparedStatement p, int first, JobRow job) throws SQLException {
    p.setString(first, job.status());
    p.setInt(first + 1, job.progress());
    p.setString(first + 2, job.errorCode());
    p.setString(first + 3, job.errorMessage());
    p.setLong(first + 4, job.createdAt().toEpochMilli());
    time(p, first + 5, job.startedAt());
    time(p, first + 6, job.completedAt());
  }

  @Override
  public synchronized Optional<JobRow> job(String id) {
    List<JobRow> rows = jobs("SELECT " + JOB_COLUMNS + " FROM jobs WHERE id = ?", id);
    return rows.stream().findFirst();
  }

  @Override
  public synchronized Optional<JobInput> input(String jobId) {
    return query(
            "read the input of job " + jobId,
            "SELECT content_type, file_name, bytes FROM job_inputs WHERE job_id = ?",
            r -> new JobInput(r.getString(1), r.getString(2), r.getBytes(3)),
            jobId)
        .stream()
        .findFirst();
  }

  @Override
  public synchronized List<JobRow> jobs() {
    return jobs("SELECT " + JOB_COLUMNS + " FROM jobs" + NEWEST_FIRST);
  }

  @Override
  public synchronized List<JobRow> jobsOwnedBy(String owner) {
    return owner == null
        ? jobs("SELECT " + JOB_COLUMNS + " FROM jobs WHERE owner IS NULL" + NEWEST_FIRST)
        : jobs("SELECT " + JOB_COLUMNS + " FROM jobs WHERE owner = ?" + NEWEST_FIRST, owner);
  }

  @Override
  public synchronized List<JobRow> jobsOf(String replica) {
    return jobs("SELECT " + JOB_COLUMNS + " FROM jobs WHERE replica = ?" + NEWEST_FIRST, replica);
  }

  @Override
  public synchronized void delete(String jobId) {
    inTransaction(
        "delete job " + jobId,
        connection -> {
          for (String table : new String[] {"artifacts", "job_inputs"}) {
            try (PreparedStatement p =
                connection.prepareStatement("DELETE FROM " + table + " WHERE job_id = ?")) {
              p.setString(1, jobId);
              p.executeUpdate();
            }
          }
          try (PreparedStatement p = connection.prepareStatement("DELETE FROM jobs WHERE id = ?")) {
            p.setString(1, jobId);
            p.executeUpdate();
          }
        });
  }

  @Override
  public synchronized Optional<ArtifactRow> artifact(String jobId) {
    return artifacts("SELECT " + ARTIFACT_COLUMNS + " FROM artifacts WHERE job_id = ?", jobId)
        .stream()
        .findFirst();
  }

  private static final String ARTIFACT_COLUMNS =
      "job_id, file_name, bytes, sha256, created_at, last_fetched_at, state";

  @Override
  public synchronized List<ArtifactRow> presentArtifacts(String replica) {
    return artifacts(
        "SELECT "
            + ARTIFACT_COLUMNS
            + " FROM artifacts WHERE replica = ? AND state = 'present'"
            + " ORDER BY created_at, job_id",
        replica);
  }

  @Override
  public synchronized void fetched(String jobId, Instant at) {
    inTransaction(
        "record a download of " + jobId,
        connection -> {
          try (PreparedStatement p =
              connection.prepareStatement(
                  "UPDATE artifacts SET last_fetched_at = ? WHERE job_id = ?")) {
            p.setLong(1, at.toEpochMilli());
            p.setString(2, jobId);
            p.executeUpdate();
          }
        });
  }

  @Override
  public synchronized void artifactGone(String jobId, ArtifactState state) {
    inTransaction(
        "mark the artifact of " + jobId + " " + state.column(),
        connection -> {
          try (PreparedStatement p =
              connection.prepareStatement("UPDATE artifacts SET state = ? WHERE job_id = ?")) {
            p.setString(1, state.column());
            p.setString(2, jobId);
            p.executeUpdate();
          }
        });
  }

  @Override
  public synchronized void close() {
    pool.close();
  }

  private List<JobRow> jobs(String sql, String... args) {
    return query(
        "list jobs",
        sql,
        r ->
            new JobRow(
                r.getString(1),
                r.getLong(2),
                r.getString(3),
                r.getString(4),
                r.getString(5),
                r.getInt(6),
                r.getString(7),
                r.getString(8),
                Instant.ofEpochMilli(r.getLong(9)),
                instant(r, 10),
                instant(r, 11),
                r.getString(12),
                r.getString(13)),
        args);
  }

  private List<ArtifactRow> artifacts(String sql, String... args) {
    return query(
        "list artifacts",
        sql,
        r ->
            new ArtifactRow(
                r.getString(1),
                r.getString(2),
                r.getLong(3),
                r.getString(4),
                Instant.ofEpochMilli(r.getLong(5)),
                instant(r, 6),
                ArtifactState.of(r.getString(7))),
        args);
  }

  private interface RowReader<T> {
    T read(ResultSet r) throws SQLException;
  }

  private <T> List<T> query(String what, String sql, RowReader<T> reader, String... args) {
    return call(
        what,
        connection -> {
          try (PreparedStatement p = connection.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
              p.setString(i + 1, args[i]);
            }
            List<T> out = new ArrayList<>();
            try (ResultSet r = p.executeQuery()) {
              while (r.next()) {
                out.add(reader.read(r));
              }
            }
            return out;
          }
        });
  }

  private interface Work {
    void run(Connection connection) throws SQLException;
  }

  private interface Call<T> {
    T run(Connection connection) throws SQLException;
  }

  private void inTransaction(String what, Work work) {
    call(
        what,
        connection -> {
          connection.setAutoCommit(false);
          try {
            work.run(connection);
            connection.commit();
          } catch (SQLException | RuntimeException e) {
            connection.rollback();
            throw e;
          } finally {
            connection.setAutoCommit(true);
          }
          return null;
        });
  }

  /** Runs {@code work} on a pooled connection, once more on a fresh one if the first was lost. */
  private <T> T call(String what, Call<T> work) {
    for (int attempt = 0; ; attempt++) {
      try (Connection connection = pool.getConnection()) {
        return work.run(connection);
      } catch (SQLException e) {
        if (attempt > 0 || !connectionLost(e)) {
          throw failure(what, e);
        }
      }
    }
  }

  /** Whether {@code e} says the connection itself failed (the pool then evicts it). */
  static boolean connectionLost(SQLException e) {
    String state = e.getSQLState();
    return state != null
        && (state.startsWith("08")
            || state.equals("57P01")
            || state.equals("57P02")
            || state.equals("57P03"));
  }

  private StoreException failure(String what, SQLException e) {
    return new StoreException("job store " + name + ": cannot " + what + ": " + e.getMessage(), e);
  }

  private static void time(PreparedStatement p, int index, Instant t) throws SQLException {
    if (t == null) {
      p.setNull(index, Types.BIGINT);
    } else {
      p.setLong(index, t.toEpochMilli());
    }
  }

  private static Instant instant(ResultSet r, int index) throws SQLException {
    long v = r.getLong(index);
    return r.wasNull() ? null : Instant.ofEpochMilli(v);
  }
}

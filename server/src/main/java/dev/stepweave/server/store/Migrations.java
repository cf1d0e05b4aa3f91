package dev.stepweave.server.store;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.function.Function;

/**
 * The store's schema, as the steps that build it: version N is the database after the first N
 * steps. Opening a store applies the steps it lacks, in one transaction; a database written by a
 * newer build (a version beyond {@link #CURRENT}) is refused rather than misread. A step is never
 * edited once released: a change is a new step.
 */
public final class Migrations {
  /** One step, its SQL given the dialect (for the few types that differ). */
  private record Step(String what, Function<Dialect, List<String>> sql) {}

  private static final List<Step> STEPS =
      List.of(
          new Step(
              "jobs and their uploaded inputs",
              d ->
                  List.of(
                      "CREATE TABLE jobs (id TEXT PRIMARY KEY, seq BIGINT NOT NULL, replica TEXT NOT NULL,"
                          + " status TEXT NOT NULL, progress INTEGER NOT NULL, error_code TEXT,"
                          + " error_message TEXT, created_at BIGINT NOT NULL, started_at BIGINT,"
                          + " completed_at BIGINT, request TEXT NOT NULL, view TEXT)",
                      "CREATE INDEX jobs_by_replica ON jobs (replica, seq)",
                      "CREATE TABLE job_inputs (job_id TEXT PRIMARY KEY, content_type TEXT,"
                          + " file_name TEXT NOT NULL, bytes "
                          + d.blob()
                          + " NOT NULL)")),
          new Step(
              "the artifact index",
              d ->
                  List.of(
                      "CREATE TABLE artifacts (job_id TEXT PRIMARY KEY, replica TEXT NOT NULL,"
                          + " file_name TEXT NOT NULL, bytes BIGINT NOT NULL, sha256 TEXT NOT NULL,"
                          + " created_at BIGINT NOT NULL, last_fetched_at BIGINT,"
                          + " state TEXT NOT NULL)",
                      "CREATE INDEX artifacts_by_age ON artifacts (replica, state, created_at)")),
          new Step(
              "job owners (API keys)",
              d ->
                  List.of(
                      "ALTER TABLE jobs ADD COLUMN owner TEXT",
                      "CREATE INDEX jobs_by_owner ON jobs (owner, seq)")));

  /** The version this build writes. */
  public static final int CURRENT = STEPS.size();

  private Migrations() {}

  /**
   * Brings the database to {@code target} (at most {@link #CURRENT}; tests stop earlier to make an
   * old database).
   *
   * @return the version it is at now
   */
  static int migrate(Connection c, Dialect dialect, int target) throws SQLException {
    boolean auto = c.getAutoCommit();
    c.setAutoCommit(false);
    try (Statement s = c.createStatement()) {
      dialect.lockForMigration(c);
      s.execute("CREATE TABLE IF NOT EXISTS stepweave_schema (version INTEGER NOT NULL)");
      int version;
      try (ResultSet r = s.executeQuery("SELECT MAX(version) FROM stepweave_schema")) {
        r.next();
        version = r.getInt(1);
      }
      if (version > CURRENT) {
        throw new SQLException(
            "the job store is at schema version "
                + version
                + ", newer than this build's "
                + CURRENT
                + ": upgrade the server or point it at another database");
      }
      for (int v = version; v < target; v++) {
        for (String sql : STEPS.get(v).sql().apply(dialect)) {
          s.execute(sql);
        }
        s.execute("INSERT INTO stepweave_schema (version) VALUES (" + (v + 1) + ")");
      }
      c.commit();
      return Math.max(version, target);
    } catch (SQLException e) {
      c.rollback();
      throw e;
    } finally {
      c.setAutoCommit(auto);
    }
  }
}

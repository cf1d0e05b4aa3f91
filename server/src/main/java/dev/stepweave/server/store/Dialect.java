package dev.stepweave.server.store;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;

/**
 * What differs between the databases a store runs on; the SQL of {@link JdbcJobStore} is shared.
 */
sealed interface Dialect {
  /** The column type of binary data. */
  String blob();

  /** Run once when the store opens, before the migrations. */
  void prepare(Connection c) throws SQLException;

  /** Connections the store's pool keeps at most. */
  int connections();

  /** Driver properties of every connection the pool opens. */
  Map<String, String> connectionProperties();

  /** Run inside the migration transaction so that replicas starting together migrate once. */
  void lockForMigration(Connection c) throws SQLException;

  /** Embedded, in the artifact directory: WAL, so readers never wait for the writer. */
  record Sqlite() implements Dialect {
    @Override
    public String blob() {
      return "BLOB";
    }

    @Override
    public void prepare(Connection c) throws SQLException {
      try (Statement s = c.createStatement()) {
        s.execute("PRAGMA journal_mode=WAL"); // kept in the file
      }
    }

    /** One: SQLite has one writer anyway, and a file does not drop connections. */
    @Override
    public int connections() {
      return 1;
    }

    /**
     * Per connection: durable across a crash of the process (what kill -9 is; only a power loss may
     * lose the last transactions), and waiting for a lock rather than failing.
     */
    @Override
    public Map<String, String> connectionProperties() {
      return Map.of("synchronous", "NORMAL", "busy_timeout", "5000");
    }

    @Override
    public void lockForMigration(Connection c) {
      // One process owns the file; SQLite's own write lock serialises the rest.
    }
  }

  /** Shared by several replicas. */
  record Postgres() implements Dialect {
    /** An arbitrary constant naming the migration lock among the database's advisory locks. */
    private static final long MIGRATION_LOCK = 0x5374657077L;

    @Override
    public String blob() {
      return "BYTEA";
    }

    @Override
    public void prepare(Connection c) {}

    /** Two: one in use, and one the pool can hand out while it replaces a broken one. */
    @Override
    public int connections() {
      return 2;
    }

    @Override
    public Map<String, String> connectionProperties() {
      return Map.of();
    }

    @Override
    public void lockForMigration(Connection c) throws SQLException {
      try (Statement s = c.createStatement()) {
        s.execute("SELECT pg_advisory_xact_lock(" + MIGRATION_LOCK + ")");
      }
    }
  }
}

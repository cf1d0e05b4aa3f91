package dev.stepweave.server.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SqliteJobStoreTest extends JobStoreContract {
  @TempDir Path dir;

  @Override
  JobStore open() {
    return JobStores.open(null, dir);
  }

  @Test
  void livesInTheArtifactDirectoryInWalMode() throws Exception {
    assertTrue(Files.exists(dir.resolve(JobStores.SQLITE_FILE)));
    try (var c = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve(JobStores.SQLITE_FILE));
        Statement s = c.createStatement();
        ResultSet r = s.executeQuery("PRAGMA journal_mode")) {
      r.next();
      assertEquals("wal", r.getString(1));
    }
  }

  @Test
  void everyPooledConnectionIsDurableAcrossAProcessCrashAndWaitsForLocks() throws Exception {
    // The properties the store's pool opens each connection with, as the driver applies them.
    var props = new java.util.Properties();
    props.putAll(new Dialect.Sqlite().connectionProperties());
    try (var c =
            DriverManager.getConnection(
                "jdbc:sqlite:" + dir.resolve(JobStores.SQLITE_FILE), props);
        Statement s = c.createStatement()) {
      try (ResultSet r = s.executeQuery("PRAGMA synchronous")) {
        r.next();
        assertEquals(1, r.getInt(1), "NORMAL");
      }
      try (ResultSet r = s.executeQuery("PRAGMA busy_timeout")) {
        r.next();
        assertEquals(5000, r.getInt(1));
      }
    }
  }

  @Test
  void connectionFailuresAreToldFromStatementFailures() {
    // (dialect-neutral: what makes the store retry a call once on a fresh connection)
    assertTrue(JdbcJobStore.connectionLost(new java.sql.SQLException("gone", "08006")));
    assertTrue(JdbcJobStore.connectionLost(new java.sql.SQLException("admin", "57P01")));
    assertTrue(!JdbcJobStore.connectionLost(new java.sql.SQLException("dup", "23505")));
    assertTrue(!JdbcJobStore.connectionLost(new java.sql.SQLException("no state")));
  }

  @Test
  void survivesReopening() {
    store.insert(row("video_kept", 1, "alice", "local"), null);
    store.close();
    store = open();
    assertEquals("alice", store.job("video_kept").orElseThrow().owner());
  }

  @Test
  void migratesAnOldDatabaseKeepingItsRows(@TempDir Path old) throws Exception {
    store.close();
    // A database as the first schema version left it: no artifact index, no owners.
    try (JobStore v1 = JobStores.sqlite(old, 1)) {
      assertEquals(1, v1.schemaVersion());
    }
    try (var c = DriverManager.getConnection("jdbc:sqlite:" + old.resolve(JobStores.SQLITE_FILE));
        Statement s = c.createStatement()) {
      s.execute(
          "INSERT INTO jobs (id, seq, replica, status, progress, created_at, request)"
              + " VALUES ('video_old', 7, 'local', 'completed', 100, 1700000000000, '{}')");
    }
    store = JobStores.open(null, old);
    assertEquals(Migrations.CURRENT, store.schemaVersion());
    JobRow r = store.job("video_old").orElseThrow();
    assertEquals("completed", r.status());
    assertEquals(null, r.owner(), "rows from before owners have none");
    assertTrue(store.artifact("video_old").isEmpty());
  }

  @Test
  void refusesADatabaseFromANewerBuild() throws Exception {
    store.close();
    try (var c = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve(JobStores.SQLITE_FILE));
        Statement s = c.createStatement()) {
      s.execute("INSERT INTO stepweave_schema (version) VALUES (" + (Migrations.CURRENT + 1) + ")");
    }
    StoreException e = assertThrows(StoreException.class, this::open);
    assertTrue(
        e.getMessage().contains("schema version " + (Migrations.CURRENT + 1)), e.getMessage());
    store = null;
  }
}

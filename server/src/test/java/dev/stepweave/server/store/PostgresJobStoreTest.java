package dev.stepweave.server.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.sql.DriverManager;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The PostgreSQL store against a real server: {@code STEPWEAVE_TEST_POSTGRES_URL} names a database
 * the tests may empty (.ci/postgres starts one). Without it the tests are skipped — except where
 * {@code STEPWEAVE_REQUIRE_POSTGRES=1} (CI sets it), where its absence fails them.
 */
public class PostgresJobStoreTest extends JobStoreContract {
  public static String url() {
    String url = System.getenv("STEPWEAVE_TEST_POSTGRES_URL");
    if (url == null || url.isBlank()) {
      if ("1".equals(System.getenv("STEPWEAVE_REQUIRE_POSTGRES"))) {
        fail(
            "STEPWEAVE_REQUIRE_POSTGRES=1 but STEPWEAVE_TEST_POSTGRES_URL is not set: start"
                + " PostgreSQL with .ci/postgres");
      }
      Assumptions.abort("no STEPWEAVE_TEST_POSTGRES_URL: PostgreSQL store tests skipped");
    }
    return url;
  }

  /** Drops what an earlier test left, so each starts from an empty database. */
  public static void empty(String url) throws Exception {
    try (var c = DriverManager.getConnection(url);
        Statement s = c.createStatement()) {
      s.execute("DROP TABLE IF EXISTS jobs, job_inputs, artifacts, stepweave_schema");
    }
  }

  @Override
  JobStore open() throws Exception {
    String url = url();
    empty(url);
    return JobStores.open(url, null);
  }

  @Test
  void aDroppedConnectionIsReplacedAndTheStoreCarriesOn() throws Exception {
    store.insert(row("video_before", 1, "alice", "gpu-0"), null);
    // The database drops every connection of ours (as a restart or a failover does).
    try (var c = DriverManager.getConnection(url());
        Statement s = c.createStatement()) {
      s.execute(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
              + " WHERE datname = current_database() AND pid <> pg_backend_pid()");
    }
    assertEquals("alice", store.job("video_before").orElseThrow().owner());
    store.insert(row("video_after", 2, "bob", "gpu-0"), null);
    assertEquals(2, store.jobs().size());
  }

  @Test
  void replicasOpeningTogetherMigrateOnceAndShareRows() throws Exception {
    store.close();
    empty(url());
    List<JobStore> replicas = new ArrayList<>();
    try (var pool = Executors.newFixedThreadPool(4)) {
      List<Future<JobStore>> opened = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        opened.add(pool.submit((Callable<JobStore>) () -> JobStores.open(url(), null)));
      }
      for (Future<JobStore> f : opened) {
        replicas.add(f.get());
      }
    }
    try {
      try (var c = DriverManager.getConnection(url());
          Statement s = c.createStatement();
          var r = s.executeQuery("SELECT COUNT(*) FROM stepweave_schema")) {
        r.next();
        assertEquals(Migrations.CURRENT, r.getInt(1), "each step recorded once");
      }
      replicas.get(0).insert(row("video_shared", 1, "alice", "r0"), null);
      assertEquals("r0", replicas.get(3).job("video_shared").orElseThrow().replica());
      assertEquals(List.of("video_shared"), ids(replicas.get(2).jobsOwnedBy("alice")));
    } finally {
      replicas.forEach(JobStore::close);
    }
    store = JobStores.open(url(), null);
  }

  @Test
  void refusesAnotherKindOfUrl() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> JobStores.open("jdbc:mysql://db/x?password=secret", null));
    assertTrue(e.getMessage().contains("jdbc:postgresql://"), e.getMessage());
    assertTrue(!e.getMessage().contains("secret"), "the message never shows the URL's query");
  }
}

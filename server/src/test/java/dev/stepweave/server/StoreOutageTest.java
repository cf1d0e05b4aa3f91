package dev.stepweave.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.server.store.PostgresJobStoreTest;
import java.nio.file.Path;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The server on PostgreSQL while the database refuses every connection (as during a restart or a
 * failover): calls that need the store (a list, a create) answer 503 {@code store_unavailable} with
 * {@code Retry-After}, within the pool's connection timeout, and a refused create leaves nothing
 * behind; jobs this replica holds and the probes still answer; once the database is back the same
 * calls succeed with nothing lost. Needs the database {@code .ci/postgres} starts (see {@link
 * PostgresJobStoreTest#url()}).
 */
@Timeout(120)
class StoreOutageTest {
  private static final Pattern DATABASE = Pattern.compile("/([^/?]+)(\\?|$)");

  @TempDir Path tmp;

  @Test
  void callsThatNeedTheStoreAnswer503WhileTheDatabaseIsAwayAndSucceedAfter() throws Exception {
    String url = PostgresJobStoreTest.url();
    PostgresJobStoreTest.empty(url);
    Matcher m = DATABASE.matcher(url);
    assertTrue(m.find(), url);
    String database = m.group(1);
    // Another database of the same server, to switch connections to ours off and on from.
    String admin = m.replaceFirst("/postgres$2");
    try (Harness h =
        new Harness(
            tmp.resolve("artifacts"),
            ServerConfig.defaults(),
            StoreConfig.defaults().withDatabaseUrl(url))) {
      String id =
          h.createVideo(Map.of("prompt", "a red fox", "size", "48x32", "num_inference_steps", 1));
      assertEquals("completed", h.awaitTerminal(id).get("status").asText());
      refuseConnections(admin, database, true);
      try {
        long start = System.nanoTime();
        Harness.Reply list = h.get("/v1/videos");
        long tookMs = (System.nanoTime() - start) / 1_000_000;
        assertEquals(503, list.status(), list::text);
        assertEquals("store_unavailable", list.json().at("/error/code").asText(), list::text);
        assertEquals("server_error", list.json().at("/error/type").asText(), list::text);
        assertTrue(
            list.json().at("/error/message").asText().startsWith("the job store is unavailable: "),
            list::text);
        assertEquals("5", list.header("Retry-After"));
        assertTrue(tookMs < 15_000, "answered after " + tookMs + " ms");
        Harness.Reply create =
            h.postJson("/v1/videos", Map.of("prompt", "a blue fox", "size", "48x32"));
        assertEquals(503, create.status(), create::text);
        assertEquals("store_unavailable", create.json().at("/error/code").asText());
        // A job this replica holds is answered from memory.
        assertEquals(200, h.get("/v1/videos/" + id).status());
        assertEquals(200, h.get("/health").status(), "liveness does not depend on the database");
      } finally {
        refuseConnections(admin, database, false);
      }
      Harness.Reply back = h.get("/v1/videos");
      assertEquals(200, back.status(), back::text);
      assertEquals(1, back.json().get("data").size(), "the refused create left nothing behind");
      assertEquals(id, back.json().at("/data/0/id").asText());
      assertEquals(200, h.get("/v1/videos/" + id + "/content").status());
    }
  }

  /** Switches connections to {@code database} off (dropping the open ones) or on again. */
  private static void refuseConnections(String adminUrl, String database, boolean refuse)
      throws Exception {
    try (var c = DriverManager.getConnection(adminUrl);
        Statement s = c.createStatement()) {
      s.execute("ALTER DATABASE " + database + " ALLOW_CONNECTIONS " + !refuse);
      if (refuse) {
        s.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '"
                + database
                + "'");
      }
    }
  }
}

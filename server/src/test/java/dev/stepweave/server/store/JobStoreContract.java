package dev.stepweave.server.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** What every {@link JobStore} does, run against each implementation over a fresh database. */
abstract class JobStoreContract {
  JobStore store;

  /** A store over an empty database. */
  abstract JobStore open() throws Exception;

  @BeforeEach
  void openStore() throws Exception {
    store = open();
  }

  @AfterEach
  void closeStore() {
    if (store != null) {
      store.close();
    }
  }

  static JobRow row(String id, long seq, String owner, String replica) {
    return new JobRow(
        id,
        seq,
        owner,
        replica,
        "queued",
        0,
        null,
        null,
        Instant.ofEpochMilli(1_700_000_000_000L + seq),
        null,
        null,
        "{\"prompt\":\"p" + seq + "\"}",
        null);
  }

  @Test
  void migratedToTheCurrentVersion() {
    assertEquals(Migrations.CURRENT, store.schemaVersion());
  }

  @Test
  void insertsReadsAndUpdatesJobsWithTheirInputs() {
    JobRow a = row("video_a", 1, null, "r1");
    byte[] png = {(byte) 0x89, 'P', 'N', 'G', 0, 1, 2};
    store.insert(a, new JobInput("image/png", "in.png", png));
    assertEquals(a, store.job("video_a").orElseThrow());
    JobInput in = store.input("video_a").orElseThrow();
    assertEquals("image/png", in.contentType());
    assertEquals("in.png", in.fileName());
    assertArrayEquals(png, in.bytes());
    assertTrue(store.input("video_none").isEmpty());

    Instant started = Instant.ofEpochMilli(1_700_000_100_000L);
    JobRow running =
        new JobRow(
            a.id(),
            a.sequence(),
            a.owner(),
            a.replica(),
            "in_progress",
            40,
            null,
            null,
            a.createdAt(),
            started,
            null,
            a.request(),
            "{\"id\":\"video_a\"}");
    store.update(running);
    assertEquals(running, store.job("video_a").orElseThrow());
    JobRow failed = running.withStatus("failed", "interrupted", "stopped", started.plusSeconds(1));
    store.update(failed);
    JobRow back = store.job("video_a").orElseThrow();
    assertEquals("interrupted", back.errorCode());
    assertEquals("stopped", back.errorMessage());
    assertEquals(started.plusSeconds(1), back.completedAt());
    assertThrows(StoreException.class, () -> store.update(row("video_absent", 9, null, "r1")));
  }

  @Test
  void listsNewestFirstByOwnerAndByReplica() {
    store.insert(row("video_1", 1, "alice", "r1"), null);
    store.insert(row("video_2", 2, "bob", "r2"), null);
    store.insert(row("video_3", 3, "alice", "r2"), null);
    store.insert(row("video_4", 4, null, "r1"), null);
    assertEquals(List.of("video_4", "video_3", "video_2", "video_1"), ids(store.jobs()));
    assertEquals(List.of("video_3", "video_1"), ids(store.jobsOwnedBy("alice")));
    assertEquals(List.of("video_2"), ids(store.jobsOwnedBy("bob")));
    assertEquals(List.of("video_4"), ids(store.jobsOwnedBy(null)));
    assertEquals(List.of("video_4", "video_1"), ids(store.jobsOf("r1")));
    assertEquals(List.of("video_3", "video_2"), ids(store.jobsOf("r2")));
  }

  @Test
  void indexesArtifactsAndRecordsDownloadsAndRemovals() {
    for (int i = 1; i <= 3; i++) {
      store.insert(row("video_" + i, i, null, i == 3 ? "r2" : "r1"), null);
    }
    // Completed out of order: the index lists by age of the file, oldest first.
    complete("video_2", 2_000, 20);
    complete("video_1", 3_000, 10);
    complete("video_3", 1_000, 30);
    assertEquals("completed", store.job("video_1").orElseThrow().status());
    assertEquals(
        List.of("video_2", "video_1"),
        store.presentArtifacts("r1").stream().map(ArtifactRow::jobId).toList());
    ArtifactRow a = store.artifact("video_1").orElseThrow();
    assertEquals(10, a.bytes());
    assertEquals("ab".repeat(32), a.sha256());
    assertNull(a.lastFetchedAt());

    Instant fetched = Instant.ofEpochMilli(1_700_000_500_000L);
    store.fetched("video_1", fetched);
    assertEquals(fetched, store.artifact("video_1").orElseThrow().lastFetchedAt());

    store.artifactGone("video_2", ArtifactState.EXPIRED);
    store.artifactGone("video_1", ArtifactState.MISSING);
    assertTrue(store.presentArtifacts("r1").isEmpty());
    assertEquals(ArtifactState.EXPIRED, store.artifact("video_2").orElseThrow().state());
    assertEquals(ArtifactState.MISSING, store.artifact("video_1").orElseThrow().state());

    store.delete("video_3");
    assertTrue(store.job("video_3").isEmpty());
    assertTrue(store.artifact("video_3").isEmpty());
    assertTrue(store.presentArtifacts("r2").isEmpty());
  }

  @Test
  void deleteRemovesTheInputToo() {
    store.insert(row("video_x", 1, null, "r1"), new JobInput(null, "", new byte[] {1}));
    store.delete("video_x");
    assertTrue(store.job("video_x").isEmpty());
    assertTrue(store.input("video_x").isEmpty());
    // The id is free again: nothing of the old job is left to collide with.
    store.insert(row("video_x", 2, null, "r1"), null);
    assertEquals(2, store.job("video_x").orElseThrow().sequence());
  }

  private void complete(String id, long createdMillis, long bytes) {
    JobRow r = store.job(id).orElseThrow();
    store.complete(
        r.withStatus("completed", null, null, Instant.ofEpochMilli(createdMillis)),
        new ArtifactRow(
            id,
            id + ".mp4",
            bytes,
            "ab".repeat(32),
            Instant.ofEpochMilli(1_700_000_000_000L + createdMillis),
            null,
            ArtifactState.PRESENT));
  }

  static List<String> ids(List<JobRow> rows) {
    return rows.stream().map(JobRow::id).toList();
  }
}

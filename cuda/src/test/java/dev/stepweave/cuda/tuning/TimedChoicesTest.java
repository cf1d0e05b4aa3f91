package dev.stepweave.cuda.tuning;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a later process reads back: the recorded position while it still holds the same candidate,
 * nothing when the library's list changed, and nothing (timing again) from a file it cannot read.
 */
class TimedChoicesTest {
  @TempDir Path dir;

  @Test
  void aRecordedChoiceIsReadByTheNextProcessWhileItsCandidateIsTheSame() {
    TimedChoices first =
        TimedChoices.open(dir, "cublaslt", "NVIDIA H200", "sm_90", "cublasLt130100");
    first.record("shape 1", 2, "algo c");
    List<String> same = List.of("algo a", "algo b", "algo c");
    TimedChoices next =
        TimedChoices.open(dir, "cublaslt", "NVIDIA H200", "sm_90", "cublasLt130100");
    assertEquals(Optional.of(2), next.lookup("shape 1", same::get, same.size()));
    assertEquals(Optional.empty(), next.lookup("shape 2", same::get, same.size()));
    // The list changed (another position holds "algo c"), or is now shorter: timed again.
    List<String> changed = List.of("algo a", "algo c", "algo b");
    assertEquals(Optional.empty(), next.lookup("shape 1", changed::get, changed.size()));
    assertEquals(Optional.empty(), next.lookup("shape 1", same::get, 2));
    // Another library version is another file.
    TimedChoices other =
        TimedChoices.open(dir, "cublaslt", "NVIDIA H200", "sm_90", "cublasLt130200");
    assertEquals(Optional.empty(), other.lookup("shape 1", same::get, same.size()));
  }

  @Test
  void anUnreadableFileMeansTimingAgainAndNoFolderKeepsChoicesInProcess() throws Exception {
    TimedChoices first = TimedChoices.open(dir, "k", "d", "a", "l");
    first.record("s", 0, "x");
    try (var files = Files.list(dir)) {
      Path file = files.filter(f -> f.toString().endsWith(".properties")).findFirst().orElseThrow();
      Files.writeString(file, "s=\\u12"); // a malformed escape: Properties refuses it
    }
    assertEquals(
        Optional.empty(), TimedChoices.open(dir, "k", "d", "a", "l").lookup("s", i -> "x", 1));
    TimedChoices inProcess = TimedChoices.open(null, "k", "d", "a", "l");
    inProcess.record("s", 0, "x");
    assertTrue(inProcess.lookup("s", i -> "x", 1).isPresent());
  }
}

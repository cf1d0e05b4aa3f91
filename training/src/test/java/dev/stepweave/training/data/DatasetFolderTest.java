package dev.stepweave.training.data;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DatasetFolderTest {
  @TempDir Path dir;

  private void captions(String... lines) throws IOException {
    Files.writeString(dir.resolve(DatasetFolder.CAPTIONS), String.join("\n", lines) + "\n");
  }

  @Test
  void readsWhatItWroteAndHashesItsContent() throws IOException {
    Files.createDirectories(dir.resolve("clips/a"));
    Files.write(dir.resolve("clips/a/frame_0000.png"), new byte[] {1, 2, 3});
    Files.write(dir.resolve("clips/b.mp4"), new byte[] {4, 5});
    List<DatasetEntry> entries =
        List.of(
            new DatasetEntry("a", "a red ball moving left on a black background", "clips/a"),
            new DatasetEntry("b", "a \"quoted\" caption", "clips/b.mp4"));
    DatasetFolder.writeCaptions(dir, entries);

    DatasetFolder folder = DatasetFolder.open(dir);
    assertEquals(entries, folder.entries());
    assertEquals(dir.resolve("clips/a"), folder.media(entries.getFirst()));
    String hash = folder.contentHash();
    assertEquals(hash, DatasetFolder.open(dir).contentHash());

    Files.write(dir.resolve("clips/a/frame_0000.png"), new byte[] {1, 2, 4});
    assertNotEquals(hash, DatasetFolder.open(dir).contentHash());
  }

  @Test
  void eachBadFolderOrLineGetsOneLineNamingIt() throws IOException {
    Path file = dir.resolve(DatasetFolder.CAPTIONS);
    assertEquals(
        "dataset folder " + dir + " has no captions.jsonl",
        assertThrows(IllegalArgumentException.class, () -> DatasetFolder.open(dir)).getMessage());

    Files.write(dir.resolve("x.png"), new byte[] {0});
    String ok = "{\"id\":\"x\",\"caption\":\"c\",\"media\":\"x.png\"}";
    record Case(String line, String message) {}
    for (Case c :
        List.of(
            new Case("{not json", "line 2: not JSON"),
            new Case("[1]", "line 2: not a JSON object"),
            new Case(
                "{\"id\":\"y\",\"caption\":\"c\"}", "line 2: 'media' must be a non-empty string"),
            new Case(
                "{\"id\":\"y\",\"caption\":\"\",\"media\":\"x.png\"}",
                "line 2: 'caption' must be a non-empty string"),
            new Case(
                "{\"id\":\"y\",\"caption\":\"c\",\"media\":\"x.png\",\"fps\":8}",
                "line 2: unknown key 'fps' (known: id, caption, media)"),
            new Case(ok, "line 2: id 'x' appears twice"),
            new Case(
                "{\"id\":\"y\",\"caption\":\"c\",\"media\":\"../x.png\"}",
                "line 2: media '../x.png' must be a path inside the folder"),
            new Case(
                "{\"id\":\"y\",\"caption\":\"c\",\"media\":\"gone.png\"}",
                "line 2: media 'gone.png' does not exist"))) {
      captions(ok, c.line());
      String message =
          assertThrows(IllegalArgumentException.class, () -> DatasetFolder.open(dir)).getMessage();
      assertTrue(message.startsWith(file + " " + c.message()), c.line() + " -> " + message);
    }
    captions("", " ");
    assertEquals(
        file + ": no entries",
        assertThrows(IllegalArgumentException.class, () -> DatasetFolder.open(dir)).getMessage());
  }
}

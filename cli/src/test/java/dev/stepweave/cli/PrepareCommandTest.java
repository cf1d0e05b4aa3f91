package dev.stepweave.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.media.Mp4Writer;
import dev.stepweave.models.wan.embedded.EmbeddedWan;
import dev.stepweave.training.data.DatasetEntry;
import dev.stepweave.training.data.DatasetFolder;
import dev.stepweave.training.data.LatentShards;
import dev.stepweave.training.shapes.ShapeSample;
import dev.stepweave.training.shapes.ShapesDataset;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PrepareCommandTest {
  @TempDir Path tmp;

  @Test
  void writesTheShapesDatasetLosslesslyAsPngFrames() throws Exception {
    Path out = tmp.resolve("shapes");
    CliHarness r =
        CliHarness.run(
            "prepare",
            "--shapes",
            "3",
            "--seed",
            "5",
            "--size",
            "96x64",
            "--frames",
            "5",
            "--out",
            out.toString());

    assertEquals(0, r.exit(), r.err());
    assertTrue(r.out().startsWith("wrote 3 shapes clips (96x64, 5 frames, seed 5) to "), r.out());
    DatasetFolder folder = DatasetFolder.open(out);
    ShapesDataset shapes = new ShapesDataset(5, 96, 64, 5);
    for (int i = 0; i < 3; i++) {
      ShapeSample s = shapes.sample(i);
      DatasetEntry e = folder.entries().get(i);
      assertEquals(new DatasetEntry(s.id(), s.caption().text(), "clips/" + s.id()), e);
      assertEquals(s.clip(), new MediaClips().decode(folder.media(e)));
    }
  }

  @Test
  void encodesAFolderOfPngAndMp4ClipsIntoShards() throws Exception {
    Path data = tmp.resolve("data");
    assertEquals(
        0,
        CliHarness.run("prepare", "--shapes", "2", "--seed", "1", "--out", data.toString()).exit());
    // A third clip as an MP4, the other media kind a folder may hold.
    ShapeSample third = new ShapesDataset(9, 64, 64, 9).sample(0);
    Mp4Writer.write(data.resolve("third.mp4"), third.clip().toFrames(), 8);
    List<DatasetEntry> entries = new java.util.ArrayList<>(DatasetFolder.open(data).entries());
    entries.add(new DatasetEntry("third", third.caption().text(), "third.mp4"));
    DatasetFolder.writeCaptions(data, entries);
    Path model = EmbeddedWan.ensure(tmp.resolve("home"));
    Path shards = tmp.resolve("shards");

    CliHarness r =
        CliHarness.run(
            "prepare",
            "--data",
            data.toString(),
            "--model",
            model.toString(),
            "--backend",
            "cpu",
            "--shard-size",
            "2",
            "--out",
            shards.toString());

    assertEquals(0, r.exit(), r.err());
    assertTrue(r.err().contains("encoded 3/3"), r.err());
    try (LatentShards s = LatentShards.open(shards)) {
      assertEquals(3, s.size());
      assertEquals(2, s.index().shards().size());
      assertEquals(DatasetFolder.open(data).contentHash(), s.index().datasetSha256());
      assertEquals("third", s.get(2).id());
      // 64x64x9 through the embedded VAE: 8 channels, every frame, 4x in space.
      assertArrayEquals(new int[] {8, 9, 16, 16}, s.get(2).latents().shape());
    }
    assertTrue(r.out().contains("wrote 3 samples in 2 shards to "), r.out());
  }

  @Test
  void badInvocationsSayWhatIsWrongInOneLine() throws Exception {
    Path out = tmp.resolve("o");
    record Case(List<String> args, int exit, String message) {}
    Files.createDirectories(tmp.resolve("full"));
    Files.writeString(tmp.resolve("full/x"), "x");
    for (Case c :
        List.of(
            new Case(
                List.of("--out", out.toString()),
                StepweaveCli.ExitCodes.USAGE,
                "give exactly one of --shapes N and --data FOLDER"),
            new Case(
                List.of("--shapes", "2", "--data", "d", "--out", out.toString()),
                StepweaveCli.ExitCodes.USAGE,
                "give exactly one of --shapes N and --data FOLDER"),
            new Case(
                List.of("--shapes", "0", "--out", out.toString()),
                StepweaveCli.ExitCodes.USAGE,
                "--shapes must be 1 or more, got 0"),
            new Case(
                List.of("--shapes", "2", "--model", "m", "--out", out.toString()),
                StepweaveCli.ExitCodes.USAGE,
                "--model does not go with --shapes"),
            new Case(
                List.of("--data", "d", "--seed", "3", "--out", out.toString()),
                StepweaveCli.ExitCodes.USAGE,
                "--seed does not go with --data"),
            new Case(
                List.of("--shapes", "2", "--size", "48x64", "--out", out.toString()),
                StepweaveCli.ExitCodes.USAGE,
                "shapes clips are at least 64x64, got 48x64"),
            new Case(
                List.of("--shapes", "2", "--size", "big", "--out", out.toString()),
                StepweaveCli.ExitCodes.USAGE,
                "size must be WIDTHxHEIGHT, e.g. 832x480, got 'big'"),
            new Case(
                List.of("--shapes", "2", "--out", tmp.resolve("full").toString()),
                StepweaveCli.ExitCodes.USAGE,
                "cannot write the shapes dataset to "
                    + tmp.resolve("full")
                    + ": the directory is not empty"),
            new Case(
                List.of("--data", tmp.resolve("none").toString(), "--out", out.toString()),
                StepweaveCli.ExitCodes.FAILURE,
                "dataset folder " + tmp.resolve("none") + " has no captions.jsonl"))) {
      List<String> args = new java.util.ArrayList<>(List.of("prepare"));
      args.addAll(c.args());
      CliHarness r = CliHarness.run(args.toArray(String[]::new));
      assertEquals(c.exit(), r.exit(), c.args() + ": " + r.err());
      assertEquals(
          "stepweave: " + c.message(), r.err().lines().findFirst().orElse(""), c.args().toString());
      assertFalse(Files.exists(out), c.args() + " left " + out);
    }
    assertEquals(List.of(tmp.resolve("full/x")), Files.list(tmp.resolve("full")).toList());
  }
}

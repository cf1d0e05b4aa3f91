package dev.stepweave.cli;

import dev.stepweave.media.AtomicOutput;
import dev.stepweave.media.PngWriter;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.models.wan.embedded.EmbeddedWan;
import dev.stepweave.tensor.Precision;
import dev.stepweave.training.data.DatasetEncoder;
import dev.stepweave.training.data.DatasetEntry;
import dev.stepweave.training.data.DatasetFolder;
import dev.stepweave.training.data.ShardIndex;
import dev.stepweave.training.shapes.ShapeSample;
import dev.stepweave.training.shapes.ShapesDataset;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code stepweave prepare}: training data — the shapes dataset, and latent shards of a folder. */
@Command(
    name = "prepare",
    mixinStandardHelpOptions = true,
    description = {
      "Prepares training data (docs/training.md). Either:",
      "  --shapes N [--seed S] [--size WxH] [--frames F] --out FOLDER",
      "      writes N clips of the synthetic shapes dataset as a dataset folder (captions.jsonl and"
          + " a folder of PNG frames per clip);",
      "  --data FOLDER [--model DIR] [--shard-size K] --out SHARDS",
      "      encodes a dataset folder through the model's text encoder and VAE (the components that"
          + " serve) into safetensors shards of latents and text embeddings. Without --model, the"
          + " embedded model.",
      ""
    })
final class PrepareCommand implements Callable<Integer> {
  private static final List<String> SHAPES_OPTIONS = List.of("--seed", "--size", "--frames");
  private static final List<String> DATA_OPTIONS =
      List.of("--model", "--shard-size", "--backend", "--precision");

  @Spec CommandSpec spec;

  @Option(names = "--shapes", paramLabel = "N", description = "Write N shapes clips.")
  Integer shapes;

  @Option(names = "--data", paramLabel = "FOLDER", description = "Encode this dataset folder.")
  Path data;

  @Option(
      names = "--out",
      required = true,
      paramLabel = "DIR",
      description = "The folder to write; it must not exist or be empty.")
  Path out;

  @Option(names = "--seed", defaultValue = "0", description = "Shapes: the dataset's seed.")
  long seed;

  @Option(
      names = "--size",
      defaultValue = "64x64",
      paramLabel = "WxH",
      description = "Shapes: frame size, at least 64x64 (the default).")
  String size;

  @Option(
      names = "--frames",
      defaultValue = "9",
      paramLabel = "F",
      description = "Shapes: frames per clip (9, the default; a Wan VAE needs 4k+1).")
  int frames;

  @Option(
      names = "--model",
      paramLabel = "DIR",
      description = "Data: the checkpoint to encode with.")
  Path model;

  @Option(
      names = "--shard-size",
      defaultValue = "256",
      paramLabel = "K",
      description = "Data: samples per shard file (256, the default).")
  int shardSize;

  @Mixin BackendOption backendOption;

  @Override
  public Integer call() throws Exception {
    if ((shapes == null) == (data == null)) {
      throw usage("give exactly one of --shapes N and --data FOLDER");
    }
    requireUnused(
        shapes != null ? DATA_OPTIONS : SHAPES_OPTIONS, shapes != null ? "--shapes" : "--data");
    return shapes != null ? writeShapes() : encode();
  }

  private int writeShapes() throws Exception {
    if (shapes < 1) {
      throw usage("--shapes must be 1 or more, got " + shapes);
    }
    int[] wh = GenerationOptions.parseSize(size);
    ShapesDataset dataset;
    try {
      dataset = new ShapesDataset(seed, wh[0], wh[1], frames);
    } catch (IllegalArgumentException e) {
      throw usage(e.getMessage());
    }
    checkOutput("the shapes dataset");
    AtomicOutput.writeDirectory(
        out,
        dir -> {
          Path clips = Files.createDirectory(dir.resolve("clips"));
          List<DatasetEntry> entries = new ArrayList<>();
          for (int i = 0; i < shapes; i++) {
            ShapeSample s = dataset.sample(i);
            PngWriter.writeFrames(clips.resolve(s.id()), s.clip().toFrames());
            entries.add(new DatasetEntry(s.id(), s.caption().text(), "clips/" + s.id()));
          }
          DatasetFolder.writeCaptions(dir, entries);
        });
    spec.commandLine()
        .getOut()
        .printf(
            "wrote %d shapes clips (%dx%d, %d frames, seed %d) to %s%n",
            shapes, wh[0], wh[1], frames, seed, out.toAbsolutePath());
    return StepweaveCli.ExitCodes.OK;
  }

  private int encode() throws Exception {
    PrintWriter err = spec.commandLine().getErr();
    if (shardSize < 1) {
      throw usage("--shard-size must be 1 or more, got " + shardSize);
    }
    checkOutput("latent shards");
    DatasetFolder folder = DatasetFolder.open(data);
    if (model == null) {
      err.println("note: no --model given; encoding with the embedded model");
    }
    Path dir = model != null ? model : EmbeddedWan.ensure();
    int total = folder.entries().size();
    ShardIndex[] index = new ShardIndex[1];
    try (WanModel wan = WanModel.load(dir, backendOption.open(err, Precision.F32))) {
      AtomicOutput.writeDirectory(
          out,
          shards ->
              index[0] =
                  new DatasetEncoder(wan)
                      .prepare(
                          folder,
                          new MediaClips(),
                          shards,
                          shardSize,
                          done -> {
                            err.printf("\rencoded %d/%d", done, total);
                            err.flush();
                          }));
      err.println();
    }
    spec.commandLine()
        .getOut()
        .printf(
            "wrote %d samples in %d shards to %s (model %s, dataset sha256 %s)%n",
            index[0].samples(),
            index[0].shards().size(),
            out.toAbsolutePath(),
            index[0].modelId(),
            index[0].datasetSha256());
    return StepweaveCli.ExitCodes.OK;
  }

  /** A bad option, as generate treats an unwritable output: exit 2, before any work. */
  private void checkOutput(String what) {
    try {
      AtomicOutput.checkDirectoryWritable(out, what);
    } catch (java.io.IOException e) {
      throw usage(e.getMessage());
    }
  }

  /** Options of the other mode are refused rather than ignored. */
  private void requireUnused(List<String> options, String mode) {
    for (String option : options) {
      if (spec.commandLine().getParseResult().hasMatchedOption(option)) {
        throw usage(option + " does not go with " + mode);
      }
    }
  }

  private CommandLine.ParameterException usage(String message) {
    return new CommandLine.ParameterException(spec.commandLine(), message);
  }
}

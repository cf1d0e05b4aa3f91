package dev.stepweave.models.parity;

import dev.stepweave.core.card.ParitySpec;
import dev.stepweave.core.parity.Comparison;
import dev.stepweave.core.parity.ParityReport;
import dev.stepweave.core.parity.RecordingFormat;
import dev.stepweave.models.wan.WanCards;
import dev.stepweave.models.wan.WanLoadOptions;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.SafetensorsFile;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Predicate;
import java.util.stream.Stream;

/**
 * The parity aligner's compare mode (what {@code stepweave verify} runs): for each reference
 * recording in a directory (the golden format), runs the matching components of a checkpoint on the
 * recording's inputs and compares every output and tap. Everything — dimensions, batch sizes, step
 * counts, stored dtypes — is read from the files; every bound from the checkpoint's card ({@link
 * ParitySpec#tolerance}).
 */
public final class RecordingVerifier {
  private final Path checkpoint;
  private final Backend backend;
  private final Consumer<String> log;
  private final WanLoadOptions options;
  private WanModel model;
  private RecordedAdapters adapters;

  public RecordingVerifier(Path checkpoint, Backend backend, Consumer<String> log) {
    this(checkpoint, backend, log, WanLoadOptions.DEFAULT);
  }

  /** A verifier that loads the checkpoint with {@code options} (experts one at a time, say). */
  public RecordingVerifier(
      Path checkpoint, Backend backend, Consumer<String> log, WanLoadOptions options) {
    this.checkpoint = checkpoint;
    this.backend = backend;
    this.log = log;
    this.options = options;
  }

  /**
   * Checks every recording in {@code referenceDir}.
   *
   * @param onEach receives each comparison as soon as it is made
   * @throws dev.stepweave.tensor.io.CheckpointException when the checkpoint or its card does not
   *     load
   */
  public ParityReport verify(Path referenceDir, Consumer<Comparison> onEach) {
    return verify(referenceDir, onEach, name -> false);
  }

  /**
   * Like {@link #verify(Path, Consumer)}, leaving out the recordings {@code checkedElsewhere}
   * claims by file name (another plane's, such as the training references): they are neither
   * checked nor noted as unknown here.
   */
  public ParityReport verify(
      Path referenceDir, Consumer<Comparison> onEach, Predicate<String> checkedElsewhere) {
    ParityReport report = new ParityReport();
    Consumer<Comparison> sink =
        c -> {
          report.add(c);
          onEach.accept(c);
        };
    List<Path> files;
    try (Stream<Path> s = Files.list(referenceDir)) {
      files = s.filter(p -> p.getFileName().toString().endsWith(".safetensors")).sorted().toList();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot list " + referenceDir + ": " + e.getMessage(), e);
    }
    if (files.isEmpty()) {
      report.error(referenceDir + ": no .safetensors recordings");
    }
    files = files.stream().filter(f -> !checkedElsewhere.test(f.getFileName().toString())).toList();
    adapters = RecordedAdapters.of(checkpoint, files);
    // The card holds the bounds; without it nothing can be judged, so it is fatal like the weights.
    ParitySpec parity = WanCards.cardFor(DiffusersDirectory.open(checkpoint)).parity();
    try {
      // A checkpoint that does not load is fatal for the whole run, not one recording's failure.
      if (files.stream()
          .map(f -> RecordingKind.of(f.getFileName().toString()))
          .anyMatch(k -> k != null && k.needsModel())) {
        model();
      }
      for (Path file : files) {
        RecordingKind kind = RecordingKind.of(file.getFileName().toString());
        if (kind == null) {
          log.accept("note: " + file.getFileName() + " matches no component; not checked");
          continue;
        }
        try (SafetensorsFile recording = SafetensorsFile.open(file)) {
          var unreadable = RecordingFormat.problem(recording);
          if (unreadable.isPresent()) {
            report.error(file.getFileName() + ": " + unreadable.get());
            continue;
          }
          kind.check(this, file, recording, new Recorder(stem(file), parity, sink));
        } catch (RuntimeException e) {
          report.error(file.getFileName() + ": " + e.getMessage());
          // Where it came from: a failure inside the backend is otherwise a bare message.
          StackTraceElement[] at = e.getStackTrace();
          for (int i = 0; i < Math.min(at.length, 16); i++) {
            log.accept("    at " + at[i]);
          }
        }
      }
    } finally {
      if (model != null) {
        model.close();
      }
    }
    return report;
  }

  /** The checkpoint, loaded once on first need. */
  WanModel model() {
    if (model == null) {
      log.accept("loading " + checkpoint + " on " + backend.name());
      model = WanModel.load(checkpoint, backend, options);
    }
    return model;
  }

  Backend backend() {
    return backend;
  }

  /** The adapters the reference directory's recordings name. */
  RecordedAdapters adapters() {
    return adapters;
  }

  private static String stem(Path file) {
    String name = file.getFileName().toString();
    return name.substring(0, name.length() - ".safetensors".length());
  }

  /** Compares outputs of one recording under its file's name, within the card's bounds. */
  record Recorder(String prefix, ParitySpec parity, Consumer<Comparison> sink) {
    /**
     * @param bound the card's tolerance to hold it to ("dit", "frames", …)
     */
    void compare(String name, Tensor actual, Tensor expected, String bound) {
      sink.accept(
          Comparison.of(prefix + "/" + name, actual, expected.toF32(), parity.tolerance(bound)));
    }
  }

  /** Inputs a check reads; a missing one is a one-line error naming the file and tensor. */
  static Tensor input(SafetensorsFile recording, Path file, String name) {
    if (!recording.keys().contains(name)) {
      throw new IllegalArgumentException("recording " + file + " has no tensor '" + name + "'");
    }
    return recording.load(name);
  }
}

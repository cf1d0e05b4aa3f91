package dev.stepweave.training.parity;

import dev.stepweave.core.parity.Comparison;
import dev.stepweave.core.parity.ParityReport;
import dev.stepweave.core.parity.RecordingFormat;
import dev.stepweave.tensor.io.SafetensorsFile;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;
import java.util.stream.Stream;

/**
 * {@code stepweave verify} for the training references: each training recording in a directory
 * ({@code dit_train}, {@code adamw_3steps}, {@code lora_train}, {@code vae_train}) recomputed on
 * the checkpoint and compared, every comparison named {@code <recording>/<tensor>} as the serving
 * verifier names its own. The optimiser and LoRA recordings take their inputs from {@code
 * dit_train} beside them.
 */
public final class TrainingVerifier {
  private static final String DIT_TRAIN = "dit_train.safetensors";
  private static final String ADAMW = "adamw_3steps.safetensors";
  private static final String LORA = "lora_train.safetensors";
  private static final String VAE = "vae_train.safetensors";
  private static final Set<String> RECORDINGS = Set.of(DIT_TRAIN, ADAMW, LORA, VAE);

  private final Path checkpoint;

  public TrainingVerifier(Path checkpoint) {
    this.checkpoint = checkpoint;
  }

  /** Whether {@code fileName} is a training recording this verifier checks. */
  public static boolean checks(String fileName) {
    return RECORDINGS.contains(fileName);
  }

  /**
   * Checks every training recording in {@code referenceDir}; a recording that cannot be checked
   * (unreadable, its inputs missing) is an error of the report, and the others still run.
   *
   * @param onEach receives each comparison once its recording has been checked
   */
  public ParityReport verify(Path referenceDir, Consumer<Comparison> onEach) {
    ParityReport report = new ParityReport();
    List<Path> files;
    try (Stream<Path> s = Files.list(referenceDir)) {
      files = s.filter(p -> checks(p.getFileName().toString())).sorted().toList();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot list " + referenceDir + ": " + e.getMessage(), e);
    }
    TrainingParity parity = files.isEmpty() ? null : new TrainingParity(checkpoint);
    for (Path file : files) {
      String name = file.getFileName().toString();
      ParityReport own = new ParityReport();
      try (SafetensorsFile rec = SafetensorsFile.open(file)) {
        var unreadable = RecordingFormat.problem(rec);
        if (unreadable.isPresent()) {
          report.error(name + ": " + unreadable.get());
          continue;
        }
        switch (name) {
          case DIT_TRAIN -> parity.checkDitTrain(rec, own);
          case ADAMW -> {
            try (SafetensorsFile inputs = inputs(file)) {
              parity.checkAdamW(rec, inputs, own);
            }
          }
          case LORA -> {
            try (SafetensorsFile inputs = inputs(file)) {
              parity.checkLoraTrain(rec, inputs, own);
            }
          }
          case VAE -> parity.checkVaeTrain(rec, own);
          default -> throw new IllegalStateException("unhandled recording " + name);
        }
      } catch (RuntimeException e) {
        report.error(name + ": " + e.getMessage());
      }
      String prefix = name.substring(0, name.length() - ".safetensors".length());
      for (Comparison c : own.comparisons()) {
        Comparison named =
            new Comparison(
                prefix + "/" + c.name(),
                c.shape(),
                c.maxAbsError(),
                c.relativeL2Error(),
                c.tolerance(),
                c.problem());
        report.add(named);
        onEach.accept(named);
      }
      own.errors().forEach(e -> report.error(name + ": " + e));
    }
    return report;
  }

  /** {@code dit_train.safetensors} beside {@code file}: the inputs the other recordings reuse. */
  private static SafetensorsFile inputs(Path file) {
    Path inputs = file.resolveSibling(DIT_TRAIN);
    if (!Files.isRegularFile(inputs)) {
      throw new IllegalArgumentException(
          "its inputs are dit_train's, and there is no " + inputs + " beside it");
    }
    return SafetensorsFile.open(inputs);
  }
}

package dev.stepweave.training.run;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Folders;
import dev.stepweave.tensor.io.Safetensors;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.training.optim.AdamW;
import dev.stepweave.training.optim.Optimiser;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * A run's checkpoint after {@code step} optimiser steps, {@code checkpoints/step-NNNNNN/} in the
 * output folder: {@code weights.safetensors} (the trainable tensors; for a LoRA a diffusers-format
 * adapter file), {@code optimizer.safetensors} (AdamW's moments {@code adamw.m.<name>}, {@code
 * adamw.v.<name>}, the EMA {@code ema.<name>}, and the step counts in its metadata) and {@code
 * state.json} (the step, the data position, the random state and the config). The data order and
 * every random draw are pure functions of the seed and the position or step, so those numbers
 * restore them exactly. Written beside and renamed into place: a checkpoint is whole or absent.
 */
record RunCheckpoint(Path dir, int step) {
  static final String FOLDER = "checkpoints";
  static final String WEIGHTS = "weights.safetensors";
  private static final String OPTIMIZER = "optimizer.safetensors";
  private static final String STATE = "state.json";
  private static final ObjectMapper JSON =
      new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  static Path folder(Path output, int step) {
    return output.resolve(FOLDER).resolve(String.format("step-%06d", step));
  }

  /** The latest complete checkpoint of the run in {@code output}, if any. */
  static Optional<RunCheckpoint> latest(Path output) throws IOException {
    Path root = output.resolve(FOLDER);
    if (!Files.isDirectory(root)) {
      return Optional.empty();
    }
    try (Stream<Path> dirs = Files.list(root)) {
      return dirs.filter(d -> d.getFileName().toString().matches("step-\\d{6}"))
          .filter(d -> Files.isRegularFile(d.resolve(STATE)))
          .map(d -> new RunCheckpoint(d, Integer.parseInt(d.getFileName().toString().substring(5))))
          .max(Comparator.comparingInt(RunCheckpoint::step));
    }
  }

  /**
   * Removes all but the newest {@code keep} complete checkpoints of the run in {@code output} (none
   * for {@code keep} 0), so that a long run's disk use stays bounded; the newest, which a resume
   * starts from, always stays.
   */
  static void prune(Path output, int keep) throws IOException {
    Path root = output.resolve(FOLDER);
    if (keep <= 0 || !Files.isDirectory(root)) {
      return;
    }
    List<Path> complete;
    try (Stream<Path> dirs = Files.list(root)) {
      complete =
          dirs.filter(d -> d.getFileName().toString().matches("step-\\d{6}"))
              .filter(d -> Files.isRegularFile(d.resolve(STATE)))
              .sorted(Comparator.comparing((Path d) -> d.getFileName().toString()).reversed())
              .toList();
    }
    for (Path old : complete.subList(Math.min(keep, complete.size()), complete.size())) {
      Folders.deleteTree(old);
    }
  }

  /**
   * Writes a checkpoint.
   *
   * @param weights the trainable tensors, written by {@code writeWeights} (a LoRA writes its own
   *     layout)
   */
  static RunCheckpoint write(
      Path output,
      int step,
      long dataPosition,
      TrainConfig config,
      Optimiser.State state,
      WeightsWriter writeWeights)
      throws IOException {
    Path dir = folder(output, step);
    Path partial = dir.resolveSibling(dir.getFileName() + ".partial");
    Folders.deleteTree(partial);
    Files.createDirectories(partial);
    writeWeights.write(partial.resolve(WEIGHTS));
    Map<String, Tensor> tensors = new LinkedHashMap<>();
    state
        .adamw()
        .firstMoments()
        .forEach((n, m) -> tensors.put("adamw.m." + n, Tensor.of(m, m.length)));
    state
        .adamw()
        .secondMoments()
        .forEach((n, v) -> tensors.put("adamw.v." + n, Tensor.of(v, v.length)));
    if (state.ema() != null) {
      state.ema().forEach((n, e) -> tensors.put("ema." + n, Tensor.of(e, e.length)));
    }
    Map<String, String> metadata = new LinkedHashMap<>();
    metadata.put("optimizer_steps", Integer.toString(state.steps()));
    metadata.put("adamw_steps", Long.toString(state.adamw().steps()));
    metadata.put("ema", Boolean.toString(state.ema() != null));
    Safetensors.write(partial.resolve(OPTIMIZER), tensors, metadata);
    ObjectNode json = JSON.createObjectNode();
    json.put("step", step);
    json.put("data_position", dataPosition);
    ObjectNode random = json.putObject("random");
    random.put("seed", config.seed());
    random.put("next_step", step);
    random.put(
        "note",
        "every draw is a pure function of (seed, step) and the data order of (seed, position)");
    json.set("config", config.canonical());
    Files.writeString(
        partial.resolve(STATE), JSON.writeValueAsString(json), StandardCharsets.UTF_8);
    Folders.deleteTree(dir);
    Files.move(partial, dir, StandardCopyOption.ATOMIC_MOVE);
    return new RunCheckpoint(dir, step);
  }

  /** Writes the trainable tensors to a file. */
  @FunctionalInterface
  interface WeightsWriter {
    void write(Path file) throws IOException;
  }

  Path weightsFile() {
    return dir.resolve(WEIGHTS);
  }

  /** The config the checkpoint's run was started with. */
  JsonNode config() throws IOException {
    return JSON.readTree(dir.resolve(STATE).toFile()).get("config");
  }

  long dataPosition() throws IOException {
    return JSON.readTree(dir.resolve(STATE).toFile()).get("data_position").longValue();
  }

  /** The trainable tensors by the names they were saved under. */
  Map<String, float[]> weights() {
    Map<String, float[]> out = new TreeMap<>();
    try (SafetensorsFile f = SafetensorsFile.open(weightsFile())) {
      for (String k : f.keys()) {
        out.put(k, f.loadF32(k).toFloatArray());
      }
    }
    return out;
  }

  /** The optimiser's state. */
  Optimiser.State optimiser() {
    try (SafetensorsFile f = SafetensorsFile.open(dir.resolve(OPTIMIZER))) {
      Map<String, float[]> m = new TreeMap<>();
      Map<String, float[]> v = new TreeMap<>();
      Map<String, float[]> ema = new TreeMap<>();
      for (String k : f.keys()) {
        float[] values = f.loadF32(k).toFloatArray();
        if (k.startsWith("adamw.m.")) {
          m.put(k.substring(8), values);
        } else if (k.startsWith("adamw.v.")) {
          v.put(k.substring(8), values);
        } else if (k.startsWith("ema.")) {
          ema.put(k.substring(4), values);
        }
      }
      Map<String, String> meta = f.metadata();
      return new Optimiser.State(
          Integer.parseInt(meta.get("optimizer_steps")),
          new AdamW.State(Long.parseLong(meta.get("adamw_steps")), m, v),
          Boolean.parseBoolean(meta.get("ema")) ? ema : null);
    }
  }
}

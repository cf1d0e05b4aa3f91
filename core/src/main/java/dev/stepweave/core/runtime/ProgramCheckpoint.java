package dev.stepweave.core.runtime;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.core.loop.LoopResult;
import dev.stepweave.core.loop.SerializedState;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Safetensors;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.SchemaVersion;
import dev.stepweave.tensor.io.TensorSource;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Where a program run stands after a step: the results of the loops already finished and the
 * serialised state of the loop in progress. Stored as one safetensors file (tensors) whose metadata
 * holds the small JSON, so a run stopped here resumes — in another process — to a bit-identical
 * result. The JSON carries its {@link #SCHEMA} version (none means 1).
 *
 * @param requestId the request it belongs to
 * @param finished results of the finished loops, by loop id, in run order
 * @param current the state of the loop in progress
 */
public record ProgramCheckpoint(
    String requestId, Map<String, LoopResult> finished, SerializedState current) {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String META_KEY = "stepweave.checkpoint";
  public static final SchemaVersion SCHEMA = new SchemaVersion("schemaVersion", 1);

  public ProgramCheckpoint {
    finished = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(finished));
  }

  /** Writes the checkpoint atomically (a temp file renamed into place). */
  public void write(Path file) {
    Map<String, Tensor> tensors = new HashMap<>();
    ObjectNode meta = JSON.createObjectNode();
    meta.put(SCHEMA.field(), SCHEMA.current());
    meta.put("requestId", requestId);
    meta.put("loop", current.loopId());
    meta.put("state", current.json());
    var order = meta.putArray("finished");
    finished.forEach(
        (loop, result) -> {
          order.add(loop);
          result
              .tensors()
              .forEach((name, t) -> tensors.put("finished/" + loop + "/" + name, host(t)));
        });
    current.tensors().forEach((name, t) -> tensors.put("state/" + name, host(t)));
    try {
      Path tmp = Files.createTempFile(file.toAbsolutePath().getParent(), ".checkpoint-", ".tmp");
      try {
        Safetensors.write(tmp, tensors, Map.of(META_KEY, meta.toString()));
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
      } finally {
        Files.deleteIfExists(tmp);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write checkpoint " + file + ": " + e.getMessage(), e);
    }
  }

  /**
   * Reads a checkpoint; its tensors are copied to the heap-free host memory it owns.
   *
   * @throws SchemaVersion.UnsupportedSchemaException when it was written by a newer build
   */
  public static ProgramCheckpoint read(Path file) {
    try (TensorSource src = SafetensorsFile.open(file)) {
      String metaText = src.metadata().get(META_KEY);
      if (metaText == null) {
        throw new IllegalArgumentException(
            file + ": not a stepweave checkpoint (no " + META_KEY + " metadata)");
      }
      var meta = JSON.readTree(metaText);
      var version = meta.get(SCHEMA.field());
      SCHEMA.check(version == null ? null : version.asText(), file + " " + META_KEY);
      Map<String, Map<String, Tensor>> finishedTensors = new LinkedHashMap<>();
      for (var loop : meta.get("finished")) {
        finishedTensors.put(loop.asText(), new HashMap<>());
      }
      Map<String, Tensor> state = new HashMap<>();
      for (String key : src.keys()) {
        // Copy out of the mapping: the source closes at the end of this method.
        Tensor t = src.load(key).toHost(src.info(key).dtype());
        if (key.startsWith("state/")) {
          state.put(key.substring("state/".length()), t);
        } else if (key.startsWith("finished/")) {
          String rest = key.substring("finished/".length());
          int slash = rest.indexOf('/');
          finishedTensors.get(rest.substring(0, slash)).put(rest.substring(slash + 1), t);
        }
      }
      Map<String, LoopResult> finished = new LinkedHashMap<>();
      finishedTensors.forEach((loop, ts) -> finished.put(loop, new LoopResult(ts, List.of())));
      return new ProgramCheckpoint(
          meta.get("requestId").asText(),
          finished,
          new SerializedState(meta.get("loop").asText(), state, meta.get("state").asText()));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read checkpoint " + file + ": " + e.getMessage(), e);
    }
  }

  /** Loops serialise to host tensors (their backend downloads them); anything else is a bug. */
  private static Tensor host(Tensor t) {
    if (t.device().kind() != dev.stepweave.tensor.Device.Kind.CPU) {
      throw new IllegalStateException("checkpoint tensors must be on the CPU, got " + t);
    }
    return t;
  }
}

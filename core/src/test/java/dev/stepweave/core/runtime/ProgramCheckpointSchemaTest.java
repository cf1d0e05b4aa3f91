package dev.stepweave.core.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.core.loop.SerializedState;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Safetensors;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.SchemaVersion;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A program checkpoint's metadata carries its schema version; the reader honours it. */
class ProgramCheckpointSchemaTest {
  private static final String META_KEY = "stepweave.checkpoint";
  private static final ObjectMapper JSON = new ObjectMapper();

  private static ProgramCheckpoint checkpoint() {
    return new ProgramCheckpoint(
        "r1",
        Map.of(),
        new SerializedState("denoise", Map.of("latents", Tensor.zeros(DType.F32, 2)), "{}"));
  }

  /** The checkpoint's metadata JSON, rewritten by {@code edit}, stored under a new file. */
  private static Path rewritten(Path dir, java.util.function.Consumer<ObjectNode> edit)
      throws Exception {
    Path file = dir.resolve("now.safetensors");
    checkpoint().write(file);
    ObjectNode meta;
    try (SafetensorsFile f = SafetensorsFile.open(file)) {
      meta = (ObjectNode) JSON.readTree(f.metadata().get(META_KEY));
    }
    edit.accept(meta);
    Path out = dir.resolve("edited.safetensors");
    Safetensors.write(
        out,
        Map.of("state/latents", Tensor.zeros(DType.F32, 2)),
        Map.of(META_KEY, meta.toString()));
    return out;
  }

  @Test
  void aWrittenCheckpointDeclaresTheCurrentVersionAndReadsBack(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("cp.safetensors");
    checkpoint().write(file);
    try (SafetensorsFile f = SafetensorsFile.open(file)) {
      assertEquals(
          ProgramCheckpoint.SCHEMA.current(),
          JSON.readTree(f.metadata().get(META_KEY)).get("schemaVersion").asInt());
    }
    assertEquals("r1", ProgramCheckpoint.read(file).requestId());
  }

  @Test
  void aCheckpointWithoutAVersionIsVersionOne(@TempDir Path dir) throws Exception {
    Path old = rewritten(dir, meta -> meta.remove("schemaVersion"));
    assertEquals("denoise", ProgramCheckpoint.read(old).current().loopId());
  }

  @Test
  void aNewerVersionIsOneLineNamingTheFileTheFieldAndBothVersions(@TempDir Path dir)
      throws Exception {
    Path newer = rewritten(dir, meta -> meta.put("schemaVersion", 7));
    var e =
        assertThrows(
            SchemaVersion.UnsupportedSchemaException.class, () -> ProgramCheckpoint.read(newer));
    assertEquals(
        newer + " " + META_KEY + ": schemaVersion 7 is newer than this build reads (1)",
        e.getMessage());
  }
}

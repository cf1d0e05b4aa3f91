package dev.stepweave.core.parity;

import dev.stepweave.tensor.io.SchemaVersion;
import dev.stepweave.tensor.io.TensorSource;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * The reference-recording format (the golden safetensors layout): its schema version lives in the
 * safetensors header metadata. The golden files, written by the reference stack, carry none and are
 * version 1.
 */
public final class RecordingFormat {
  public static final SchemaVersion SCHEMA = new SchemaVersion("schema_version", 1);

  private RecordingFormat() {}

  /** The header metadata a recording is written with: {@code extra} plus the schema version. */
  public static Map<String, String> metadata(Map<String, String> extra) {
    var out = new LinkedHashMap<String, String>(extra);
    out.put(SCHEMA.field(), SCHEMA.written());
    return out;
  }

  /** Why this build cannot read {@code recording}, or empty when it can. */
  public static Optional<String> problem(TensorSource recording) {
    return SCHEMA.problem(recording.metadata().get(SCHEMA.field()));
  }
}

package dev.stepweave.models.wan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.extend.ParityAligner;
import dev.stepweave.core.parity.Comparison;
import dev.stepweave.core.parity.ParityReport;
import dev.stepweave.core.parity.RecordingFormat;
import dev.stepweave.core.parity.Tolerance;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.EngineConfig;
import dev.stepweave.models.GoldenBounds;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.Safetensors;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.TensorSource;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Records a denoise run's transformer taps and compares runs against the recording. */
class ParityAlignerTest {
  private static final Tolerance DIT = GoldenBounds.tolerance("dit");
  private static WanModel model;

  @BeforeAll
  static void load() {
    model = WanModel.load(ResumeInNewProcessTest.CHECKPOINT, new CpuBackend());
  }

  @AfterAll
  static void close() {
    model.close();
  }

  /** Runs a 6-step request with {@code seed} under an aligner recording its denoise taps. */
  private static ParityAligner run(long seed) throws Exception {
    ParityAligner aligner = new ParityAligner("r", WanCards.DENOISE);
    Extensions observed = Extensions.builder().observe(aligner).build();
    try (Engine engine = new Engine(model, EngineConfig.defaults(), observed)) {
      engine
          .submit(BlockCacheTest.request("r", seed, Map.of()))
          .result()
          .get(120, TimeUnit.SECONDS);
    }
    return aligner;
  }

  @Test
  void aRecordingOfANewerSchemaIsAnErrorNotACompare(@TempDir Path dir) throws Exception {
    ParityAligner recorded = run(7);
    Path file = dir.resolve("newer.safetensors");
    Safetensors.write(
        file, recorded.taps(), Map.of(RecordingFormat.SCHEMA.field(), "99", "loop", "denoise"));
    try (TensorSource recording = SafetensorsFile.open(file)) {
      ParityReport report = recorded.compareWith(recording, DIT);
      assertFalse(report.passed());
      assertEquals(List.of(), report.comparisons());
      assertEquals(
          List.of(
              "recording of denoise: schema_version 99 is newer than this build reads ("
                  + RecordingFormat.SCHEMA.current()
                  + ")"),
          report.errors());
    }
  }

  @Test
  void aRunMatchesItsOwnRecordingAndAnotherSeedDivergesAtTheFirstLatentTap(@TempDir Path dir)
      throws Exception {
    ParityAligner recorded = run(7);
    List<String> names = List.copyOf(recorded.taps().keySet());
    assertEquals("step_0/rope_cos", names.get(0));
    assertTrue(names.contains("step_0/block_0"), names.toString());
    assertTrue(names.contains("step_0/block_0#1"), "the unconditional forward's block: " + names);
    assertTrue(names.contains("step_5/prediction"), names.toString());
    Path file = dir.resolve("taps.safetensors");
    recorded.save(file);

    try (TensorSource recording = SafetensorsFile.open(file)) {
      assertEquals(names.size(), recording.keys().size());
      assertEquals(
          RecordingFormat.SCHEMA.written(),
          recording.metadata().get(RecordingFormat.SCHEMA.field()),
          "a recording names its schema version");
      ParityReport same = run(7).compareWith(recording, DIT);
      assertTrue(same.passed(), () -> same.firstDivergence().map(Comparison::line).orElse(""));
      assertEquals(names.size(), same.comparisons().size());

      ParityReport other = run(8).compareWith(recording, DIT);
      assertFalse(other.passed());
      // The rotary tables depend only on the shape; the patch embedding is the first tap that
      // sees the latents.
      assertEquals("step_0/patch_embedding", other.firstDivergence().orElseThrow().name());
      assertTrue(other.comparisons().get(0).passed());
    }
  }
}

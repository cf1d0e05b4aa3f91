package dev.stepweave.models.wan;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.GenerationResult;
import dev.stepweave.core.runtime.ProgramCheckpoint;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.Safetensors;
import dev.stepweave.tensor.io.SafetensorsFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A run stopped after a step and resumed in a fresh JVM gives bit-identical frames: after text
 * encoding, at several denoising steps, and in the middle of the VAE decode.
 */
class ResumeInNewProcessTest {
  static final Path CHECKPOINT = Path.of(System.getProperty("stepweave.golden"), "wan21-tiny");

  /** The same request in both processes (id included: checkpoints belong to a request). */
  static Request request() {
    var params =
        new DiffusionParams(
            4, 5.0, 1234, 32, 32, 9, 8, "blurry", Optional.empty(), Optional.empty());
    return Request.builder(TaskType.T2V, params)
        .id("resume-test")
        .prompt("a red ball bouncing")
        .nodeOverrides(Map.of(WanCards.TEXT_ENCODE, Map.of("max_sequence_length", "16")))
        .build();
  }

  @Test
  void resumedRunsAreBitIdentical(@TempDir Path dir) throws Exception {
    List<Path> checkpoints = new ArrayList<>();
    List<String> loops = new ArrayList<>();
    Tensor whole;
    try (WanModel model = WanModel.load(CHECKPOINT, new CpuBackend());
        Engine engine = new Engine(model)) {
      GenerationResult r =
          engine
              .submit(
                  request(),
                  cp -> {
                    Path f = dir.resolve("step" + checkpoints.size() + ".safetensors");
                    cp.write(f);
                    checkpoints.add(f);
                    loops.add(cp.current().loopId());
                  })
              .result()
              .get(60, TimeUnit.SECONDS);
      whole = r.artifact(Artifact.VideoArtifact.class).frames();
    }
    // 2 encoder chunks (prompt, negative), 4 denoising steps, 3 latent frames decoded.
    assertEquals(
        List.of(
            "text_encode",
            "text_encode",
            "denoise",
            "denoise",
            "denoise",
            "denoise",
            "vae_decode",
            "vae_decode",
            "vae_decode"),
        loops);
    for (int i : new int[] {1, 4, 7}) {
      Path frames = dir.resolve("resumed" + i + ".safetensors");
      Process p =
          new ProcessBuilder(
                  ProcessHandle.current().info().command().orElseThrow(),
                  "--add-modules",
                  "jdk.incubator.vector",
                  "-cp",
                  System.getProperty("java.class.path"),
                  "-Dstepweave.golden=" + System.getProperty("stepweave.golden"),
                  ResumeMain.class.getName(),
                  checkpoints.get(i).toString(),
                  frames.toString())
              .redirectErrorStream(true)
              .start();
      String output = new String(p.getInputStream().readAllBytes());
      assertTrue(p.waitFor(120, TimeUnit.SECONDS));
      assertEquals(0, p.exitValue(), output);
      try (SafetensorsFile f = SafetensorsFile.open(frames)) {
        assertArrayEquals(
            whole.toFloatArray(),
            f.load("frames").toFloatArray(),
            "resumed after step " + i + " (" + loops.get(i) + ")");
      }
    }
  }

  /** The child process: resume one checkpoint and write the frames. */
  public static final class ResumeMain {
    public static void main(String[] args) throws Exception {
      try (WanModel model = WanModel.load(CHECKPOINT, new CpuBackend());
          Engine engine = new Engine(model)) {
        ProgramCheckpoint from = ProgramCheckpoint.read(Path.of(args[0]));
        GenerationResult r =
            engine.resume(request(), from, null).result().get(60, TimeUnit.SECONDS);
        Safetensors.write(
            Path.of(args[1]),
            Map.of("frames", r.artifact(Artifact.VideoArtifact.class).frames()),
            Map.of());
      }
      System.exit(Files.exists(Path.of(args[1])) ? 0 : 1);
    }
  }
}

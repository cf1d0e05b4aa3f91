package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.ProgramCheckpoint;
import dev.stepweave.core.runtime.RequestHandle;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.tensor.Precision;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Safetensors;
import dev.stepweave.tensor.io.SafetensorsFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * GPU-resident state checkpoints like the CPU's: a run on the CUDA backend (BF16 mode, the product
 * path) writes a checkpoint file after every step — its device tensors copied to the host in their
 * own dtypes — and a run resumed from one after text encoding, mid-denoise or mid-decode gives the
 * uninterrupted run's frames bit for bit, in this process and in a fresh one.
 */
@Tag("gpu")
class CheckpointResumeGpuTest {
  private static final Path TINY =
      Path.of(System.getProperty("stepweave.golden", "testdata/golden"), "wan21-tiny");

  /** The same request in both processes (id included: checkpoints belong to a request). */
  static Request request() {
    var params =
        new DiffusionParams(
            4, 5.0, 1234, 32, 32, 9, 8, "blurry", Optional.empty(), Optional.empty());
    return Request.builder(TaskType.T2V, params)
        .id("gpu-resume-test")
        .prompt("a red ball bouncing")
        .nodeOverrides(Map.of("text_encode", Map.of("max_sequence_length", "16")))
        .build();
  }

  @Test
  void gpuStateCheckpointsResumeBitIdenticallyHereAndInAnotherProcess(@TempDir Path dir)
      throws Exception {
    List<Path> checkpoints = new ArrayList<>();
    List<String> loops = new ArrayList<>();
    Tensor whole;
    try (WanModel model = WanModel.load(TINY, Gpu.bf16());
        Engine engine = new Engine(model)) {
      whole =
          frames(
              engine.submit(
                  request(),
                  cp -> {
                    Path f = dir.resolve("step" + checkpoints.size() + ".safetensors");
                    cp.write(f);
                    checkpoints.add(f);
                    loops.add(cp.current().loopId());
                  }));
      assertEquals(9, loops.size(), "2 encoder chunks, 4 denoising steps, 3 latent frames");
      for (int i : new int[] {1, 4, 7}) {
        ProgramCheckpoint from = ProgramCheckpoint.read(checkpoints.get(i));
        Tensor resumed = frames(engine.resume(request(), from, null));
        assertArrayEquals(
            whole.toFloatArray(),
            resumed.toFloatArray(),
            "resumed in this process after step " + i + " (" + loops.get(i) + ")");
      }
    }
    for (int i : new int[] {1, 4, 7}) {
      Path frames = dir.resolve("resumed" + i + ".safetensors");
      Process p =
          new ProcessBuilder(
                  ProcessHandle.current().info().command().orElseThrow(),
                  "--add-modules",
                  "jdk.incubator.vector",
                  "--enable-native-access=ALL-UNNAMED",
                  "-cp",
                  System.getProperty("java.class.path"),
                  "-Dstepweave.golden=" + System.getProperty("stepweave.golden", "testdata/golden"),
                  ResumeMain.class.getName(),
                  checkpoints.get(i).toString(),
                  frames.toString())
              .redirectErrorStream(true)
              .start();
      String output = new String(p.getInputStream().readAllBytes());
      assertTrue(p.waitFor(300, TimeUnit.SECONDS));
      assertEquals(0, p.exitValue(), output);
      try (SafetensorsFile f = SafetensorsFile.open(frames)) {
        assertArrayEquals(
            whole.toFloatArray(),
            f.load("frames").toFloatArray(),
            "resumed in a fresh process after step " + i + " (" + loops.get(i) + ")");
      }
    }
  }

  /** The frames of a run, once it has finished. */
  static Tensor frames(RequestHandle handle) throws Exception {
    return handle
        .result()
        .get(120, TimeUnit.SECONDS)
        .artifact(Artifact.VideoArtifact.class)
        .frames();
  }

  /** The child process: resume one checkpoint on the GPU and write the frames. */
  public static final class ResumeMain {
    public static void main(String[] args) throws Exception {
      try (WanModel model = WanModel.load(TINY, CudaBackend.open(0, Precision.BF16));
          Engine engine = new Engine(model)) {
        ProgramCheckpoint from = ProgramCheckpoint.read(Path.of(args[0]));
        Tensor frames = frames(engine.resume(request(), from, null));
        Safetensors.write(Path.of(args[1]), Map.of("frames", frames), Map.of());
      }
      System.exit(Files.exists(Path.of(args[1])) ? 0 : 1);
    }
  }
}

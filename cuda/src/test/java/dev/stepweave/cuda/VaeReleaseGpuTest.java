package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.cuda.memory.DeviceAllocator;
import dev.stepweave.models.wan.vae.DecodeState;
import dev.stepweave.models.wan.vae.WanVae;
import dev.stepweave.models.wan.vae.WanVaeConfig;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.RandomWeights;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.Weights;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The golden tiny VAE decoded in the BF16 mode through the production path, where every step
 * releases what it made but the frames and the causal caches ({@code Backend.StepMemory}): the
 * video stays within relative L2 1e-2 of the F32 reference (a released tensor still in use would
 * corrupt it), and the memory held between steps does not grow with the frame count.
 */
@Tag("gpu")
class VaeReleaseGpuTest {
  private static final Path GOLDEN =
      Path.of(System.getProperty("stepweave.golden", "testdata/golden"));

  /** Slack for a step's transient peak: two blocks of the allocator's large size class. */
  private static final long SLACK = 4L << 20;

  @Test
  void bf16DecodeIsAccurateAndHoldsOnlyFramesAndCachesBetweenSteps() {
    CudaBackend gpu = Gpu.bf16();
    Path dir = GOLDEN.resolve("wan21-tiny").resolve("vae");
    try (SafetensorsFile ckpt =
            SafetensorsFile.open(dir.resolve("diffusion_pytorch_model.safetensors"));
        SafetensorsFile rec =
            SafetensorsFile.open(
                GOLDEN.resolve("wan21-tiny-expected").resolve("vae.safetensors"))) {
      WanVae vae =
          WanVae.load(
              WanVaeConfig.read(dir.resolve("config.json")), new Weights(ckpt, gpu, DType.F32));
      Tensor decoded = gpu.download(vae.decode(gpu.upload(rec.load("z"), DType.F32)));
      double rel = RelativeL2.of(decoded, rec.load("decoded"));
      System.out.printf("  vae/decoded BF16 mode: rel L2 %.2e (bound 1e-2)%n", rel);
      assertTrue(rel <= 1e-2, "BF16 relative L2 " + rel);

      // Eight latent frames of the golden latents' size: every cache holds two frames from the
      // second step on, so what the decode holds beyond its frames must stay constant.
      Tensor z = gpu.upload(RandomWeights.uniform(11, 1f, 1, 16, 8, 4, 4), DType.F32);
      vae.decode(z); // plans and BF16 filter copies are made here, not during the measurement
      System.gc();
      sleep();
      gpu.synchronize();
      long baseline = gpu.liveBytes();
      DecodeState state = vae.startDecode(z);
      List<Long> extra = new ArrayList<>();
      List<Long> transients = new ArrayList<>();
      while (!state.isDone()) {
        long before = gpu.liveBytes();
        gpu.resetPeaks();
        vae.step(state);
        transients.add(gpu.peakLiveBytes() - before);
        extra.add(gpu.liveBytes() - baseline - blocks(state.decoded()));
      }
      System.out.println("  held beyond the frames after each step: " + extra);
      System.out.println("  transient peak of each step: " + transients);
      for (int step = 2; step < extra.size(); step++) {
        assertTrue(
            extra.get(step) <= extra.get(1),
            "step " + (step + 1) + " holds " + extra.get(step) + " B, step 2 " + extra.get(1));
        assertTrue(
            transients.get(step) <= transients.get(1) + SLACK,
            "step " + (step + 1) + " peaked " + transients.get(step) + " B above its start");
      }
      assertTrue(extra.getLast() <= 0, "a finished decode holds " + extra.getLast() + " B more");
    }
  }

  /** The allocator's bytes for the tensors' storages. */
  private static long blocks(List<Tensor> tensors) {
    return tensors.stream().mapToLong(t -> DeviceAllocator.sizeClass(t.storage().byteSize())).sum();
  }

  private static void sleep() {
    try {
      Thread.sleep(200);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}

package dev.stepweave.models.wan.vae;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.Weights;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The decoder's layers after its last temporal upsampler take a four-frame chunk {@value
 * CausalStack#FRAME_LOCAL_RUN} frames at a time: no convolution at the output resolution sees more
 * new frames than that (beyond the two it remembers), while the decode still gives every frame.
 */
class FrameLocalRunTest {
  private static final Path GOLDEN = Path.of(System.getProperty("stepweave.golden"));

  @Test
  void fullResolutionConvolutionsSeeAFewFramesAtATime() {
    CpuBackend cpu = new CpuBackend(2);
    List<int[]> convInputs = new ArrayList<>();
    Backend watched =
        (Backend)
            Proxy.newProxyInstance(
                Backend.class.getClassLoader(),
                new Class<?>[] {Backend.class},
                (proxy, method, args) -> {
                  if (method.getName().equals("conv3d")) {
                    convInputs.add(((Tensor) args[0]).shape());
                  }
                  try {
                    return method.invoke(cpu, args);
                  } catch (InvocationTargetException e) {
                    throw e.getCause();
                  }
                });
    Path dir = GOLDEN.resolve("wan21-tiny/vae");
    try (SafetensorsFile weights =
            SafetensorsFile.open(dir.resolve("diffusion_pytorch_model.safetensors"));
        SafetensorsFile expected =
            SafetensorsFile.open(GOLDEN.resolve("wan21-tiny-expected/vae.safetensors"))) {
      WanVae vae =
          WanVae.load(
              WanVaeConfig.read(dir.resolve("config.json")),
              new Weights(weights, watched, DType.F32));
      Tensor latents = watched.upload(expected.load("z"), DType.F32);
      assertTrue(latents.dim(2) >= 3, "a decode with four-frame chunks");
      Tensor video = watched.download(vae.decode(latents));
      int frames = 4 * (latents.dim(2) - 1) + 1;
      assertEquals(frames, video.dim(2));
      int h = video.dim(3), w = video.dim(4);
      int mostFrames = 0;
      for (int[] shape : convInputs) {
        if (shape[3] == h && shape[4] == w) {
          mostFrames = Math.max(mostFrames, shape[2]);
        }
      }
      assertEquals(Frames.CACHED + CausalStack.FRAME_LOCAL_RUN, mostFrames, "padded input frames");
      assertArrayEquals(
          new int[] {1, 3, frames, h, w}, video.shape(), "every frame decoded, in order");
    }
  }
}

package dev.stepweave.training.run;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.models.wan.embedded.EmbeddedWan;
import dev.stepweave.models.wan.vae.WanVae;
import dev.stepweave.models.wan.vae.WanVaeConfig;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.InMemoryTensors;
import dev.stepweave.tensor.io.Weights;
import java.util.Arrays;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A fresh VAE started per frame ({@code init.past_frames: zero}) reconstructs each frame of a clip
 * exactly as it reconstructs that frame alone, a still — which is what lets the embedded default's
 * VAE train on stills and serve clips. With random taps on earlier frames it does not.
 */
class PerFrameStartTest {
  private static final int FRAMES = 5;
  private static final int SIZE = 16;

  @Test
  void aPerFrameVaeReconstructsEachFrameOfAClipAsItsStill() {
    ObjectNode config = config(false);
    Map<String, Tensor> random = EmbeddedWan.initialWeights("vae", config, 1);
    Map<String, Tensor> perFrame = PerFrameStart.of(config, random);
    Tensor clip = clip();

    assertTrue(eachFrameIsItsStill(config, perFrame, clip));
    assertFalse(eachFrameIsItsStill(config, random, clip), "random past taps mix frames");
  }

  @Test
  void aVaeThatDownsamplesTimeCannotStartPerFrame() {
    ObjectNode config = config(true);
    TrainConfigException e =
        assertThrows(
            TrainConfigException.class,
            () -> PerFrameStart.of(config, EmbeddedWan.initialWeights("vae", config, 1)));
    assertTrue(e.getMessage().startsWith("init.past_frames: zero makes a per-frame VAE"));
  }

  private static boolean eachFrameIsItsStill(
      ObjectNode config, Map<String, Tensor> weights, Tensor clip) {
    CpuBackend cpu = new CpuBackend(2);
    WanVae vae =
        WanVae.load(
            WanVaeConfig.fromJson(config),
            new Weights(new InMemoryTensors(weights, "test"), cpu, DType.F32));
    float[] whole = vae.decode(vae.encode(clip).mean()).toHost(DType.F32).toFloatArray();
    int plane = SIZE * SIZE;
    for (int t = 0; t < FRAMES; t++) {
      float[] still = new float[3 * plane];
      float[] source = clip.toFloatArray();
      for (int c = 0; c < 3; c++) {
        System.arraycopy(source, (c * FRAMES + t) * plane, still, c * plane, plane);
      }
      Tensor frame = Tensor.of(still, 1, 3, 1, SIZE, SIZE);
      float[] alone = vae.decode(vae.encode(frame).mean()).toHost(DType.F32).toFloatArray();
      for (int c = 0; c < 3; c++) {
        float[] mine =
            Arrays.copyOfRange(whole, (c * FRAMES + t) * plane, (c * FRAMES + t + 1) * plane);
        float[] its = Arrays.copyOfRange(alone, c * plane, (c + 1) * plane);
        if (!Arrays.equals(mine, its)) {
          return false;
        }
      }
    }
    return true;
  }

  private static ObjectNode config(boolean temporal) {
    ObjectNode n = new ObjectMapper().createObjectNode();
    n.put("_class_name", "AutoencoderKLWan");
    n.put("base_dim", 4);
    n.put("z_dim", 4);
    n.putArray("dim_mult").add(1).add(2);
    n.put("num_res_blocks", 1);
    n.putArray("attn_scales");
    n.putArray("temperal_downsample").add(temporal);
    n.put("dropout", 0.0);
    n.put("in_channels", 3);
    n.put("out_channels", 3);
    n.put("scale_factor_spatial", 2);
    n.put("scale_factor_temporal", temporal ? 2 : 1);
    n.putArray("latents_mean").add(0).add(0).add(0).add(0);
    n.putArray("latents_std").add(1).add(1).add(1).add(1);
    return n;
  }

  /** Five 16×16 frames of smooth values in [-1, 1], each frame different. */
  private static Tensor clip() {
    float[] v = new float[3 * FRAMES * SIZE * SIZE];
    for (int i = 0; i < v.length; i++) {
      v[i] = (float) Math.sin(i * 0.37 + (i / (SIZE * SIZE)) * 0.9);
    }
    return Tensor.of(v, 1, 3, FRAMES, SIZE, SIZE);
  }
}

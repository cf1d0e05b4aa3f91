package dev.stepweave.training.run;

import com.fasterxml.jackson.databind.JsonNode;
import dev.stepweave.tensor.Tensor;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Fresh VAE weights turned into a per-frame image VAE: every causal 3-D convolution's taps on
 * earlier frames set to zero, its tap on the current frame kept (a 2-D kernel "inflated" to 3-D).
 *
 * <p>Why: a causal VAE trained on stills never sees an earlier frame (the first frame is padded
 * with zeros in time), so those taps get no gradient and keep whatever they started with. Started
 * at zero, a VAE trained on stills alone reconstructs every frame of a clip as it does a still, and
 * the stills run is otherwise bit for bit the run with random taps. Only without temporal
 * downsampling: a stride-2 time convolution has no "current frame" tap to keep.
 */
final class PerFrameStart {
  private PerFrameStart() {}

  static Map<String, Tensor> of(JsonNode vaeConfig, Map<String, Tensor> weights) {
    JsonNode temporal = vaeConfig.get("temperal_downsample");
    if (temporal != null) {
      for (JsonNode down : temporal) {
        if (down.asBoolean()) {
          throw new TrainConfigException(
              "init.past_frames: zero makes a per-frame VAE, which needs temperal_downsample all"
                  + " false, got "
                  + temporal);
        }
      }
    }
    Map<String, Tensor> out = new LinkedHashMap<>();
    weights.forEach((name, w) -> out.put(name, isCausalKernel(w) ? currentFrameOnly(w) : w));
    return out;
  }

  /** A 3-D convolution weight [out, in, kt, kh, kw] that reads more than one frame. */
  private static boolean isCausalKernel(Tensor w) {
    int[] shape = w.shape();
    return shape.length == 5 && shape[2] > 1;
  }

  private static Tensor currentFrameOnly(Tensor w) {
    int[] shape = w.shape();
    float[] values = w.toFloatArray();
    int taps = shape[2];
    int tap = shape[3] * shape[4];
    // The causal padding puts the current frame at the last tap.
    for (int base = 0; base < values.length; base += taps * tap) {
      Arrays.fill(values, base, base + (taps - 1) * tap, 0f);
    }
    return Tensor.of(values, shape);
  }
}

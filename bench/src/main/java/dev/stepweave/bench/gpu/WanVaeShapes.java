package dev.stepweave.bench.gpu;

import dev.stepweave.models.wan.vae.WanVaeConfig;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The parameter names and shapes of a diffusers Wan VAE ({@code AutoencoderKLWan}, Wan 2.1 or the
 * residual Wan 2.2 one) for a config, so the decode benchmark can run on random weights of the real
 * size (RandomWeightShapesTest checks this against the golden checkpoints).
 */
final class WanVaeShapes {
  private WanVaeShapes() {}

  static Map<String, int[]> of(WanVaeConfig cfg) {
    Map<String, int[]> m = new LinkedHashMap<>();
    List<Integer> mult = cfg.dimMult();
    int stages = mult.size();
    int z = cfg.zDim();

    int[] enc = new int[stages + 1];
    enc[0] = cfg.baseDim();
    for (int i = 0; i < stages; i++) {
      enc[i + 1] = cfg.baseDim() * mult.get(i);
    }
    conv(m, "encoder.conv_in", cfg.inChannels(), enc[0], 3, 3, 3);
    int block = 0;
    for (int i = 0; i < stages; i++) {
      // Wan 2.1 numbers blocks and downsamplers in one list; the residual encoder nests them.
      String stage = "encoder.down_blocks." + i;
      int in = enc[i];
      for (int r = 0; r < cfg.numResBlocks(); r++) {
        String name = cfg.isResidual() ? stage + ".resnets." + r : "encoder.down_blocks." + block++;
        residual(m, name, in, enc[i + 1]);
        in = enc[i + 1];
      }
      if (i < stages - 1) {
        String s = cfg.isResidual() ? stage + ".downsampler" : "encoder.down_blocks." + block++;
        conv(m, s + ".resample.1", enc[i + 1], enc[i + 1], 3, 3);
        if (cfg.temperalDownsample().get(i)) {
          conv(m, s + ".time_conv", enc[i + 1], enc[i + 1], 3, 1, 1);
        }
      }
    }
    mid(m, "encoder.mid_block", enc[stages]);
    m.put("encoder.norm_out.gamma", new int[] {enc[stages], 1, 1, 1});
    conv(m, "encoder.conv_out", enc[stages], 2 * z, 3, 3, 3);
    conv(m, "quant_conv", 2 * z, 2 * z, 1, 1, 1);
    conv(m, "post_quant_conv", z, z, 1, 1, 1);

    int base = cfg.decoderDim();
    int[] dec = new int[stages + 1];
    dec[0] = base * mult.getLast();
    for (int i = 0; i < stages; i++) {
      dec[i + 1] = base * mult.get(stages - 1 - i);
    }
    conv(m, "decoder.conv_in", z, dec[0], 3, 3, 3);
    mid(m, "decoder.mid_block", dec[0]);
    for (int i = 0; i < stages; i++) {
      String s = "decoder.up_blocks." + i;
      // A Wan 2.1 upsampler halves the width; the residual decoder's keeps it.
      int in = i == 0 || cfg.isResidual() ? dec[i] : dec[i] / 2;
      for (int r = 0; r <= cfg.numResBlocks(); r++) {
        residual(m, s + ".resnets." + r, in, dec[i + 1]);
        in = dec[i + 1];
      }
      if (i < stages - 1) {
        String up = s + (cfg.isResidual() ? ".upsampler" : ".upsamplers.0");
        int out = cfg.isResidual() ? dec[i + 1] : dec[i + 1] / 2;
        conv(m, up + ".resample.1", dec[i + 1], out, 3, 3);
        if (cfg.temporalUpsample().get(i)) {
          conv(m, up + ".time_conv", dec[i + 1], 2 * dec[i + 1], 3, 1, 1);
        }
      }
    }
    m.put("decoder.norm_out.gamma", new int[] {dec[stages], 1, 1, 1});
    conv(m, "decoder.conv_out", dec[stages], cfg.outChannels(), 3, 3, 3);
    return m;
  }

  private static void residual(Map<String, int[]> m, String name, int in, int out) {
    m.put(name + ".norm1.gamma", new int[] {in, 1, 1, 1});
    conv(m, name + ".conv1", in, out, 3, 3, 3);
    m.put(name + ".norm2.gamma", new int[] {out, 1, 1, 1});
    conv(m, name + ".conv2", out, out, 3, 3, 3);
    if (in != out) {
      conv(m, name + ".conv_shortcut", in, out, 1, 1, 1);
    }
  }

  private static void mid(Map<String, int[]> m, String name, int channels) {
    residual(m, name + ".resnets.0", channels, channels);
    m.put(name + ".attentions.0.norm.gamma", new int[] {channels, 1, 1});
    conv(m, name + ".attentions.0.to_qkv", channels, 3 * channels, 1, 1);
    conv(m, name + ".attentions.0.proj", channels, channels, 1, 1);
    residual(m, name + ".resnets.1", channels, channels);
  }

  /** A convolution's {@code weight [out, in, kernel…]} and {@code bias [out]}. */
  private static void conv(Map<String, int[]> m, String name, int in, int out, int... kernel) {
    int[] shape = new int[2 + kernel.length];
    shape[0] = out;
    shape[1] = in;
    System.arraycopy(kernel, 0, shape, 2, kernel.length);
    m.put(name + ".weight", shape);
    m.put(name + ".bias", new int[] {out});
  }
}

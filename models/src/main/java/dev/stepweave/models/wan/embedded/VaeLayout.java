package dev.stepweave.models.wan.embedded;

import static dev.stepweave.models.wan.embedded.ConfigValues.booleansOf;
import static dev.stepweave.models.wan.embedded.ConfigValues.intOf;
import static dev.stepweave.models.wan.embedded.ConfigValues.intsOf;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The tensors of a Wan 2.1 {@code AutoencoderKLWan} checkpoint (non-residual, no attention scales),
 * shapes from its config.json. Convolutions are 3-D and causal except the 2-D spatial resamplers;
 * RMS-norm gains are stored with trailing singleton dims ([C,1,1,1] for video, [C,1,1] for the 2-D
 * attention norm).
 */
final class VaeLayout {
  private VaeLayout() {}

  static List<TensorSpec> tensors(JsonNode config) {
    int base = intOf(config, "base_dim");
    JsonNode decoderBase = config.get("decoder_base_dim");
    int decoderDim = decoderBase == null || decoderBase.isNull() ? base : decoderBase.intValue();
    int z = intOf(config, "z_dim");
    int numRes = intOf(config, "num_res_blocks");
    List<Integer> mult = intsOf(config, "dim_mult");
    List<Boolean> temporalDown = booleansOf(config, "temperal_downsample");

    List<TensorSpec> t = new ArrayList<>();
    encoder(t, base, intOf(config, "in_channels"), 2 * z, numRes, mult, temporalDown);
    conv3d(t, "quant_conv", 2 * z, 2 * z, 1, 1, 1);
    conv3d(t, "post_quant_conv", z, z, 1, 1, 1);
    decoder(t, decoderDim, z, intOf(config, "out_channels"), numRes, mult, temporalDown.reversed());
    return t;
  }

  private static void encoder(
      List<TensorSpec> t,
      int base,
      int inChannels,
      int outChannels,
      int numRes,
      List<Integer> mult,
      List<Boolean> temporalDown) {
    conv3d(t, "encoder.conv_in", inChannels, base, 3, 3, 3);
    int block = 0;
    int in = base;
    for (int stage = 0; stage < mult.size(); stage++) {
      int out = base * mult.get(stage);
      for (int r = 0; r < numRes; r++) {
        residual(t, "encoder.down_blocks." + block++, in, out);
        in = out;
      }
      if (stage < mult.size() - 1) {
        String resample = "encoder.down_blocks." + block++;
        conv2d(t, resample + ".resample.1", out, out);
        if (temporalDown.get(stage)) {
          conv3d(t, resample + ".time_conv", out, out, 3, 1, 1);
        }
      }
    }
    midBlock(t, "encoder.mid_block", in);
    rmsGain(t, "encoder.norm_out.gamma", in, 3);
    conv3d(t, "encoder.conv_out", in, outChannels, 3, 3, 3);
  }

  private static void decoder(
      List<TensorSpec> t,
      int base,
      int z,
      int outChannels,
      int numRes,
      List<Integer> mult,
      List<Boolean> temporalUp) {
    int top = base * mult.getLast();
    smoothConv3d(t, "decoder.conv_in", z, top, 3);
    midBlock(t, "decoder.mid_block", top, true);
    int in = top;
    for (int stage = 0; stage < mult.size(); stage++) {
      String prefix = "decoder.up_blocks." + stage;
      int out = base * mult.get(mult.size() - 1 - stage);
      for (int r = 0; r <= numRes; r++) {
        residual(t, prefix + ".resnets." + r, in, out, true);
        in = out;
      }
      if (stage < mult.size() - 1) {
        // An upsampler doubles the resolution and halves the channels.
        smoothConv2d(t, prefix + ".upsamplers.0.resample.1", out, out / 2);
        if (temporalUp.get(stage)) {
          conv3d(t, prefix + ".upsamplers.0.time_conv", out, 2 * out, 3, 1, 1);
        }
        in = out / 2;
      }
    }
    rmsGain(t, "decoder.norm_out.gamma", in, 3);
    smoothConv3d(t, "decoder.conv_out", in, outChannels, 3);
  }

  private static void residual(List<TensorSpec> t, String prefix, int in, int out) {
    residual(t, prefix, in, out, false);
  }

  /** A residual block; {@code smooth} makes its 3×3 convolutions blurs (the decoder's). */
  private static void residual(List<TensorSpec> t, String prefix, int in, int out, boolean smooth) {
    rmsGain(t, prefix + ".norm1.gamma", in, 3);
    conv3x3x3(t, prefix + ".conv1", in, out, smooth);
    rmsGain(t, prefix + ".norm2.gamma", out, 3);
    conv3x3x3(t, prefix + ".conv2", out, out, smooth);
    if (in != out) {
      conv3d(t, prefix + ".conv_shortcut", in, out, 1, 1, 1);
    }
  }

  private static void midBlock(List<TensorSpec> t, String prefix, int dim) {
    midBlock(t, prefix, dim, false);
  }

  private static void midBlock(List<TensorSpec> t, String prefix, int dim, boolean smooth) {
    residual(t, prefix + ".resnets.0", dim, dim, smooth);
    String attention = prefix + ".attentions.0";
    rmsGain(t, attention + ".norm.gamma", dim, 2);
    conv1x1(t, attention + ".to_qkv", dim, 3 * dim);
    conv1x1(t, attention + ".proj", dim, dim);
    residual(t, prefix + ".resnets.1", dim, dim, smooth);
  }

  private static void rmsGain(List<TensorSpec> t, String name, int channels, int spatialRank) {
    int[] shape = new int[spatialRank + 1];
    Arrays.fill(shape, 1);
    shape[0] = channels;
    t.add(TensorSpec.constant(name, 1f, shape));
  }

  private static void conv3d(
      List<TensorSpec> t, String prefix, int in, int out, int kt, int kh, int kw) {
    t.add(TensorSpec.fanIn(prefix + ".weight", in * kt * kh * kw, out, in, kt, kh, kw));
    t.add(TensorSpec.bias(prefix + ".bias", out));
  }

  private static void conv3x3x3(
      List<TensorSpec> t, String prefix, int in, int out, boolean smooth) {
    if (smooth) {
      smoothConv3d(t, prefix, in, out, 3);
    } else {
      conv3d(t, prefix, in, out, 3, 3, 3);
    }
  }

  /**
   * A decoder convolution: random channel mixing, a blur in space. An untrained decoder with random
   * 3×3 kernels produces per-pixel colour noise, which 4:2:0 video cannot carry (and which looks
   * like nothing); blurred kernels keep the noise-like output spatially smooth.
   */
  private static void smoothConv3d(List<TensorSpec> t, String prefix, int in, int out, int kt) {
    t.add(TensorSpec.smoothSpatial(prefix + ".weight", in * kt, out, in, kt, 3, 3));
    t.add(TensorSpec.bias(prefix + ".bias", out));
  }

  private static void smoothConv2d(List<TensorSpec> t, String prefix, int in, int out) {
    t.add(TensorSpec.smoothSpatial(prefix + ".weight", in, out, in, 3, 3));
    t.add(TensorSpec.bias(prefix + ".bias", out));
  }

  private static void conv2d(List<TensorSpec> t, String prefix, int in, int out) {
    t.add(TensorSpec.fanIn(prefix + ".weight", in * 9, out, in, 3, 3));
    t.add(TensorSpec.bias(prefix + ".bias", out));
  }

  private static void conv1x1(List<TensorSpec> t, String prefix, int in, int out) {
    t.add(TensorSpec.fanIn(prefix + ".weight", in, out, in, 1, 1));
    t.add(TensorSpec.bias(prefix + ".bias", out));
  }
}

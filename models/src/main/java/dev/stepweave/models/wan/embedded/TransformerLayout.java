package dev.stepweave.models.wan.embedded;

import static dev.stepweave.models.wan.embedded.ConfigValues.intOf;
import static dev.stepweave.models.wan.embedded.ConfigValues.intsOf;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;

/**
 * The tensors of a text-to-video {@code WanTransformer3DModel} checkpoint (diffusers names), with
 * shapes derived from its config.json. Norms without affine parameters (norm1, norm3, norm_out)
 * have no tensors.
 */
final class TransformerLayout {
  private TransformerLayout() {}

  static List<TensorSpec> tensors(JsonNode config) {
    int dim = intOf(config, "num_attention_heads") * intOf(config, "attention_head_dim");
    int in = intOf(config, "in_channels");
    int out = intOf(config, "out_channels");
    int textDim = intOf(config, "text_dim");
    int freqDim = intOf(config, "freq_dim");
    int ffn = intOf(config, "ffn_dim");
    List<Integer> patch = intsOf(config, "patch_size");
    int patchVolume = patch.get(0) * patch.get(1) * patch.get(2);

    List<TensorSpec> t = new ArrayList<>();
    t.add(
        TensorSpec.fanIn(
            "patch_embedding.weight",
            in * patchVolume,
            dim,
            in,
            patch.get(0),
            patch.get(1),
            patch.get(2)));
    t.add(TensorSpec.bias("patch_embedding.bias", dim));
    linear(t, "condition_embedder.time_embedder.linear_1", freqDim, dim);
    linear(t, "condition_embedder.time_embedder.linear_2", dim, dim);
    linear(t, "condition_embedder.time_proj", dim, 6 * dim);
    linear(t, "condition_embedder.text_embedder.linear_1", textDim, dim);
    linear(t, "condition_embedder.text_embedder.linear_2", dim, dim);
    for (int b = 0; b < intOf(config, "num_layers"); b++) {
      String p = "blocks." + b + ".";
      attention(t, p + "attn1", dim);
      attention(t, p + "attn2", dim);
      t.add(TensorSpec.constant(p + "norm2.weight", 1f, dim));
      t.add(TensorSpec.constant(p + "norm2.bias", 0f, dim));
      linear(t, p + "ffn.net.0.proj", dim, ffn);
      linear(t, p + "ffn.net.2", ffn, dim);
      t.add(modulation(p + "scale_shift_table", 6, dim));
    }
    linear(t, "proj_out", dim, out * patchVolume);
    t.add(modulation("scale_shift_table", 2, dim));
    return t;
  }

  private static void attention(List<TensorSpec> t, String prefix, int dim) {
    for (String proj : List.of("to_q", "to_k", "to_v", "to_out.0")) {
      linear(t, prefix + "." + proj, dim, dim);
    }
    // qk_norm "rms_norm_across_heads": one RMSNorm weight spanning every head.
    t.add(TensorSpec.constant(prefix + ".norm_q.weight", 1f, dim));
    t.add(TensorSpec.constant(prefix + ".norm_k.weight", 1f, dim));
  }

  /** Shift/scale/gate table, drawn as the reference initialises it: N(0, 1/dim) per entry. */
  private static TensorSpec modulation(String name, int rows, int dim) {
    return TensorSpec.normal(name, (float) (1 / Math.sqrt(dim)), 1, rows, dim);
  }

  private static void linear(List<TensorSpec> t, String prefix, int in, int out) {
    t.add(TensorSpec.fanIn(prefix + ".weight", in, out, in));
    t.add(TensorSpec.bias(prefix + ".bias", out));
  }
}

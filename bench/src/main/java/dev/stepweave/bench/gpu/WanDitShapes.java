package dev.stepweave.bench.gpu;

import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The parameter names and shapes of a diffusers Wan DiT for a config — text-to-video,
 * image-to-video (the image embedder and the cross-attention's image projections) and Wan2.2 TI2V,
 * whose per-token timesteps need no parameters of their own — so timings can run on random weights
 * of any size (RandomWeightShapesTest checks this against the golden checkpoints).
 */
final class WanDitShapes {
  private WanDitShapes() {}

  static Map<String, int[]> of(WanTransformerConfig cfg) {
    int dim = cfg.innerDim();
    int ffn = cfg.ffnDim();
    Map<String, int[]> m = new LinkedHashMap<>();
    WanTransformerConfig.PatchSize p = cfg.patchSize();
    m.put("patch_embedding.weight", new int[] {dim, cfg.inChannels(), p.t(), p.h(), p.w()});
    m.put("patch_embedding.bias", new int[] {dim});
    linear(m, "condition_embedder.time_embedder.linear_1", dim, cfg.freqDim());
    linear(m, "condition_embedder.time_embedder.linear_2", dim, dim);
    linear(m, "condition_embedder.time_proj", 6 * dim, dim);
    linear(m, "condition_embedder.text_embedder.linear_1", dim, cfg.textDim());
    linear(m, "condition_embedder.text_embedder.linear_2", dim, dim);
    WanTransformerConfig.ImageConditioning image = cfg.image();
    if (image != null) {
      String e = "condition_embedder.image_embedder.";
      int in = image.imageDim();
      if (image.posEmbedSeqLen() != null) {
        m.put(e + "pos_embed", new int[] {1, image.posEmbedSeqLen(), in});
      }
      m.put(e + "norm1.weight", new int[] {in});
      m.put(e + "norm1.bias", new int[] {in});
      linear(m, e + "ff.net.0.proj", in, in);
      linear(m, e + "ff.net.2", dim, in);
      m.put(e + "norm2.weight", new int[] {dim});
      m.put(e + "norm2.bias", new int[] {dim});
    }
    for (int i = 0; i < cfg.numLayers(); i++) {
      String b = "blocks." + i + ".";
      for (String attn : new String[] {"attn1", "attn2"}) {
        for (String proj : new String[] {"to_q", "to_k", "to_v", "to_out.0"}) {
          linear(m, b + attn + "." + proj, dim, dim);
        }
        m.put(b + attn + ".norm_q.weight", new int[] {dim});
        m.put(b + attn + ".norm_k.weight", new int[] {dim});
      }
      if (image != null) {
        linear(m, b + "attn2.add_k_proj", dim, image.addedKvProjDim());
        linear(m, b + "attn2.add_v_proj", dim, image.addedKvProjDim());
        m.put(b + "attn2.norm_added_k.weight", new int[] {dim});
      }
      if (cfg.crossAttnNorm()) {
        m.put(b + "norm2.weight", new int[] {dim});
        m.put(b + "norm2.bias", new int[] {dim});
      }
      linear(m, b + "ffn.net.0.proj", ffn, dim);
      linear(m, b + "ffn.net.2", dim, ffn);
      m.put(b + "scale_shift_table", new int[] {1, 6, dim});
    }
    linear(m, "proj_out", cfg.outChannels() * p.volume(), dim);
    m.put("scale_shift_table", new int[] {1, 2, dim});
    return m;
  }

  private static void linear(Map<String, int[]> m, String name, int out, int in) {
    m.put(name + ".weight", new int[] {out, in});
    m.put(name + ".bias", new int[] {out});
  }
}

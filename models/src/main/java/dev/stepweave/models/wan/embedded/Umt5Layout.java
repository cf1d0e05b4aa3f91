package dev.stepweave.models.wan.embedded;

import static dev.stepweave.models.wan.embedded.ConfigValues.intOf;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;

/**
 * The tensors of a {@code UMT5EncoderModel} checkpoint with tied embeddings (only {@code
 * shared.weight} is stored), shapes from its config.json. Every block carries its own relative
 * attention bias, as in UMT5 (T5 keeps one in the first block only). Scales follow T5's
 * initialisation, whose attention has no 1/sqrt(d) factor, so queries are drawn smaller.
 */
final class Umt5Layout {
  private Umt5Layout() {}

  static List<TensorSpec> tensors(JsonNode config) {
    int model = intOf(config, "d_model");
    int kv = intOf(config, "d_kv");
    int heads = intOf(config, "num_heads");
    int ff = intOf(config, "d_ff");
    int inner = heads * kv;

    List<TensorSpec> t = new ArrayList<>();
    t.add(TensorSpec.normal("shared.weight", 1f, intOf(config, "vocab_size"), model));
    for (int b = 0; b < intOf(config, "num_layers"); b++) {
      String attn = "encoder.block." + b + ".layer.0.";
      t.add(TensorSpec.constant(attn + "layer_norm.weight", 1f, model));
      t.add(
          TensorSpec.normal(
              attn + "SelfAttention.q.weight", (float) (1 / Math.sqrt(model * kv)), inner, model));
      t.add(TensorSpec.fanIn(attn + "SelfAttention.k.weight", model, inner, model));
      t.add(TensorSpec.fanIn(attn + "SelfAttention.v.weight", model, inner, model));
      t.add(TensorSpec.fanIn(attn + "SelfAttention.o.weight", inner, model, inner));
      t.add(
          TensorSpec.fanIn(
              attn + "SelfAttention.relative_attention_bias.weight",
              model,
              intOf(config, "relative_attention_num_buckets"),
              heads));
      String ffn = "encoder.block." + b + ".layer.1.";
      t.add(TensorSpec.constant(ffn + "layer_norm.weight", 1f, model));
      t.add(TensorSpec.fanIn(ffn + "DenseReluDense.wi_0.weight", model, ff, model));
      t.add(TensorSpec.fanIn(ffn + "DenseReluDense.wi_1.weight", model, ff, model));
      t.add(TensorSpec.fanIn(ffn + "DenseReluDense.wo.weight", ff, model, ff));
    }
    t.add(TensorSpec.constant("encoder.final_layer_norm.weight", 1f, model));
    return t;
  }
}

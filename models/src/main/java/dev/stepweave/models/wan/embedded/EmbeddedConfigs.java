package dev.stepweave.models.wan.embedded;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The config files of the embedded model: the diffusers / transformers keys a real {@code
 * Wan2.1-T2V-1.3B-Diffusers} download carries, with the embedded model's small dimensions. This is
 * the one place those dimensions are chosen; the tensor layouts read them back from these trees.
 */
final class EmbeddedConfigs {
  private static final JsonNodeFactory JSON = JsonNodeFactory.instance;
  private static final String DIFFUSERS_VERSION = "0.40.0.dev0";

  static final int TEXT_DIM = 32;

  // Wan 2.1's published latent statistics, so latents are scaled exactly as the real VAE's are.
  private static final double[] LATENTS_MEAN = {
    -0.7571, -0.7089, -0.9113, 0.1075, -0.1745, 0.9653, -0.1517, 1.5508, 0.4134, -0.0715, 0.5517,
    -0.3632, -0.1922, -0.9497, 0.2503, -0.2921
  };
  private static final double[] LATENTS_STD = {
    2.8184, 1.4541, 2.3275, 2.6558, 1.2196, 1.7708, 2.6052, 2.0743, 3.2687, 2.1526, 2.8652, 1.5579,
    1.6382, 1.1253, 2.8251, 1.916
  };

  private EmbeddedConfigs() {}

  static ObjectNode modelIndex() {
    ObjectNode n = JSON.objectNode();
    n.put("_class_name", "WanPipeline");
    n.put("_diffusers_version", DIFFUSERS_VERSION);
    n.putNull("boundary_ratio");
    n.put("expand_timesteps", false);
    n.set("scheduler", pair("diffusers", "UniPCMultistepScheduler"));
    n.set("text_encoder", pair("transformers", "UMT5EncoderModel"));
    n.set("tokenizer", pair("transformers", "TokenizersBackend"));
    n.set("transformer", pair("diffusers", "WanTransformer3DModel"));
    n.set("transformer_2", JSON.arrayNode().addNull().addNull());
    n.set("vae", pair("diffusers", "AutoencoderKLWan"));
    return n;
  }

  static ObjectNode transformer() {
    ObjectNode n = JSON.objectNode();
    n.put("_class_name", "WanTransformer3DModel");
    n.put("_diffusers_version", DIFFUSERS_VERSION);
    n.putNull("added_kv_proj_dim");
    n.put("attention_head_dim", 32);
    n.put("cross_attn_norm", true);
    n.put("eps", 1e-6);
    n.put("ffn_dim", 128);
    n.put("freq_dim", 256);
    n.putNull("image_dim");
    n.put("in_channels", 16);
    n.put("num_attention_heads", 2);
    n.put("num_layers", 2);
    n.put("out_channels", 16);
    n.set("patch_size", ints(1, 2, 2));
    n.putNull("pos_embed_seq_len");
    n.put("qk_norm", "rms_norm_across_heads");
    n.put("rope_max_seq_len", 1024);
    n.put("text_dim", TEXT_DIM);
    return n;
  }

  static ObjectNode vae() {
    ObjectNode n = JSON.objectNode();
    n.put("_class_name", "AutoencoderKLWan");
    n.put("_diffusers_version", DIFFUSERS_VERSION);
    n.set("attn_scales", JSON.arrayNode());
    n.put("base_dim", 4);
    n.putNull("decoder_base_dim");
    n.set("dim_mult", ints(1, 2, 4, 4));
    n.put("dropout", 0.0);
    n.put("in_channels", 3);
    n.put("is_residual", false);
    n.set("latents_mean", doubles(LATENTS_MEAN));
    n.set("latents_std", doubles(LATENTS_STD));
    n.put("num_res_blocks", 1);
    n.put("out_channels", 3);
    n.putNull("patch_size");
    n.put("scale_factor_spatial", 8);
    n.put("scale_factor_temporal", 4);
    n.set("temperal_downsample", JSON.arrayNode().add(false).add(true).add(true));
    n.put("z_dim", 16);
    return n;
  }

  static ObjectNode textEncoder(int vocabSize) {
    ObjectNode n = JSON.objectNode();
    n.set("architectures", JSON.arrayNode().add("UMT5EncoderModel"));
    n.put("classifier_dropout", 0.0);
    n.put("d_ff", 64);
    n.put("d_kv", 16);
    n.put("d_model", TEXT_DIM);
    n.put("decoder_start_token_id", WordTokenizer.PAD_ID);
    n.put("dense_act_fn", "gelu_new");
    n.put("dropout_rate", 0.0);
    n.put("dtype", "float32");
    n.put("eos_token_id", WordTokenizer.EOS_ID);
    n.put("feed_forward_proj", "gated-gelu");
    n.put("initializer_factor", 1.0);
    n.put("is_decoder", false);
    n.put("is_encoder_decoder", true);
    n.put("is_gated_act", true);
    n.put("layer_norm_epsilon", 1e-6);
    n.put("model_type", "umt5");
    n.put("num_decoder_layers", 2);
    n.put("num_heads", 2);
    n.put("num_layers", 2);
    n.put("pad_token_id", WordTokenizer.PAD_ID);
    n.put("relative_attention_max_distance", 128);
    n.put("relative_attention_num_buckets", 32);
    n.put("tie_word_embeddings", true);
    n.put("use_cache", true);
    n.put("vocab_size", vocabSize);
    return n;
  }

  static ObjectNode scheduler() {
    ObjectNode n = JSON.objectNode();
    n.put("_class_name", "UniPCMultistepScheduler");
    n.put("_diffusers_version", DIFFUSERS_VERSION);
    n.put("beta_end", 0.02);
    n.put("beta_schedule", "linear");
    n.put("beta_start", 0.0001);
    n.set("disable_corrector", JSON.arrayNode());
    n.put("dynamic_thresholding_ratio", 0.995);
    n.put("final_sigmas_type", "zero");
    n.put("flow_shift", 3.0);
    n.put("lower_order_final", true);
    n.put("num_train_timesteps", 1000);
    n.put("predict_x0", true);
    n.put("prediction_type", "flow_prediction");
    n.put("rescale_betas_zero_snr", false);
    n.put("sample_max_value", 1.0);
    n.putNull("shift_terminal");
    n.putNull("sigma_max");
    n.putNull("sigma_min");
    n.put("solver_order", 2);
    n.putNull("solver_p");
    n.put("solver_type", "bh2");
    n.put("steps_offset", 0);
    n.put("thresholding", false);
    n.put("time_shift_type", "exponential");
    n.put("timestep_spacing", "linspace");
    n.putNull("trained_betas");
    n.put("use_beta_sigmas", false);
    n.put("use_dynamic_shifting", false);
    n.put("use_exponential_sigmas", false);
    n.put("use_flow_sigmas", true);
    n.put("use_karras_sigmas", false);
    return n;
  }

  static ObjectNode tokenizerConfig() {
    ObjectNode n = JSON.objectNode();
    n.put("backend", "tokenizers");
    n.put("eos_token", WordTokenizer.EOS);
    n.put("model_max_length", EmbeddedWan.MAX_SEQUENCE_LENGTH);
    n.put("pad_token", WordTokenizer.PAD);
    n.put("tokenizer_class", "TokenizersBackend");
    n.put("unk_token", WordTokenizer.UNK);
    return n;
  }

  private static ArrayNode pair(String library, String className) {
    return JSON.arrayNode().add(library).add(className);
  }

  private static ArrayNode ints(int... values) {
    ArrayNode a = JSON.arrayNode();
    for (int v : values) {
      a.add(v);
    }
    return a;
  }

  private static ArrayNode doubles(double[] values) {
    ArrayNode a = JSON.arrayNode();
    for (double v : values) {
      a.add(v);
    }
    return a;
  }
}

package dev.stepweave.models.wan.embedded;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The config files of the embedded model that are not trained here: the diffusers / transformers
 * keys a real {@code Wan2.1-T2V-1.3B-Diffusers} download carries, with the embedded text encoder's
 * small dimensions. This is the one place those are chosen; the tensor layout reads them back. The
 * trained transformer's and VAE's configs ship with their weights ({@link EmbeddedCheckpoint}).
 */
final class EmbeddedConfigs {
  private static final JsonNodeFactory JSON = JsonNodeFactory.instance;
  private static final String DIFFUSERS_VERSION = "0.40.0.dev0";

  static final int TEXT_DIM = 32;

  /**
   * Where the two transformers take turns, as a share of the 1000 training timesteps: {@code
   * transformer} (the high-noise expert) runs the steps at t ≥ 875 and {@code transformer_2} the
   * rest, as a Wan 2.2 {@code boundary_ratio} says. At the default 8 steps with flow shift 3 that
   * is the first three (σ 1.00, 0.95, 0.90), where a generation places the object and sets which
   * way it moves; the expert was trained at σ 0.85–1 only.
   */
  static final double BOUNDARY_RATIO = 0.875;

  private EmbeddedConfigs() {}

  static ObjectNode modelIndex() {
    ObjectNode n = JSON.objectNode();
    n.put("_class_name", "WanPipeline");
    n.put("_diffusers_version", DIFFUSERS_VERSION);
    n.put("boundary_ratio", BOUNDARY_RATIO);
    n.put("expand_timesteps", false);
    n.set("scheduler", pair("diffusers", "UniPCMultistepScheduler"));
    n.set("text_encoder", pair("transformers", "UMT5EncoderModel"));
    n.set("tokenizer", pair("transformers", "TokenizersBackend"));
    n.set("transformer", pair("diffusers", "WanTransformer3DModel"));
    n.set("transformer_2", pair("diffusers", "WanTransformer3DModel"));
    n.set("vae", pair("diffusers", "AutoencoderKLWan"));
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
}

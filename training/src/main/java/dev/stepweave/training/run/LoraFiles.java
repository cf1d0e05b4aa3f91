package dev.stepweave.training.run;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stepweave.models.wan.transformer.LinearShape;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Safetensors;
import dev.stepweave.training.shapes.SplitMix64;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A trained LoRA's files, in the two layouts the serving adapter loader reads (docs/lora.md):
 * diffusers/PEFT ({@code transformer.<layer>.lora_A.weight}, {@code lora_B.weight}, alpha in the
 * {@code lora_adapter_metadata}) and the original Wan one ({@code
 * diffusion_model.blocks.N.self_attn.q.lora_down.weight}, {@code lora_up.weight}, a scalar {@code
 * alpha}). The factors are named as {@link dev.stepweave.training.wan.TrainableLora} names them:
 * {@code <layer>.lora_A.weight} (down) and {@code <layer>.lora_B.weight} (up). Public for {@link
 * #writeInitial} and {@link #DEFAULT_TARGETS}: a fresh LoRA run's starting adapter, for code that
 * takes that run's steps outside {@link TrainingRun} (a benchmark, a test).
 */
public final class LoraFiles {
  /** Layers adapted when a config names no targets: every attention projection. */
  public static final List<String> DEFAULT_TARGETS = List.of("to_q", "to_k", "to_v", "to_out.0");

  private static final String DOWN = ".lora_A.weight";
  private static final String UP = ".lora_B.weight";
  private static final long FACTOR_STREAM = 0x4c4f_5241_494e_4954L;
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Pattern ATTENTION =
      Pattern.compile("blocks\\.(\\d+)\\.(attn1|attn2)\\.(to_q|to_k|to_v|to_out\\.0)");
  private static final Pattern FFN =
      Pattern.compile("blocks\\.(\\d+)\\.ffn\\.(net\\.0\\.proj|net\\.2)");

  private LoraFiles() {}

  /**
   * The initial factors, as PEFT initialises them: down uniform in ±1/√in (Kaiming's uniform with a
   * = √5), up zero — so the adapter starts as no change. Drawn from the seed per layer name.
   *
   * @throws IllegalArgumentException when a target matches no layer
   */
  static Map<String, Tensor> initial(
      Map<String, LinearShape> layers, List<String> targets, int rank, long seed) {
    List<String> wanted = targets.isEmpty() ? DEFAULT_TARGETS : targets;
    Map<String, Tensor> out = new LinkedHashMap<>();
    for (String target : wanted) {
      boolean matched = false;
      for (var e : layers.entrySet()) {
        String layer = e.getKey();
        if (!(layer.equals(target) || layer.endsWith("." + target))) {
          continue;
        }
        matched = true;
        if (out.containsKey(layer + DOWN)) {
          continue;
        }
        LinearShape shape = e.getValue();
        SplitMix64 random = new SplitMix64(SplitMix64.mix(seed ^ FACTOR_STREAM) ^ layer.hashCode());
        float[] down = new float[rank * shape.in()];
        double bound = 1 / Math.sqrt(shape.in());
        for (int i = 0; i < down.length; i++) {
          down[i] = (float) ((2 * random.nextDouble() - 1) * bound);
        }
        out.put(layer + DOWN, Tensor.of(down, rank, shape.in()));
        out.put(layer + UP, Tensor.zeros(dev.stepweave.tensor.DType.F32, shape.out(), rank));
      }
      if (!matched) {
        throw new IllegalArgumentException(
            "method.targets: '" + target + "' matches no adaptable layer of the transformer");
      }
    }
    return out;
  }

  /**
   * Writes the adapter a fresh LoRA run of {@code method} starts from to {@code file}, as {@code
   * stepweave train} does ({@code lora-init.safetensors}): the {@link #initial} factors of the
   * method's targets (every attention projection when it names none) at its rank, drawn from {@code
   * seed}, in the diffusers layout with the method's alpha — what {@link
   * dev.stepweave.training.wan.TrainableLora#load} reads.
   *
   * @param layers the transformer's adaptable layers ({@code WanTransformer.adaptableLayers})
   * @return {@code file}
   * @throws IllegalArgumentException when a target matches no layer
   */
  public static Path writeInitial(
      Path file, Map<String, LinearShape> layers, TrainConfig.Method.Lora method, long seed) {
    Map<String, Tensor> factors = initial(layers, method.targets(), method.rank(), seed);
    writeDiffusers(file, factors, method.rank(), method.alpha(), TrainedOutputs.ADAPTER_RECIPE);
    return file;
  }

  /** Writes the diffusers/PEFT layout. */
  static void writeDiffusers(
      Path file, Map<String, Tensor> factors, int rank, double alpha, String recipeJson) {
    Map<String, Tensor> tensors = new LinkedHashMap<>();
    factors.forEach((name, t) -> tensors.put("transformer." + name, t));
    Map<String, String> metadata = new LinkedHashMap<>();
    metadata.put("format", "pt");
    metadata.put(
        "lora_adapter_metadata",
        JSON.createObjectNode().put("r", rank).put("lora_alpha", alpha).toString());
    metadata.put(dev.stepweave.core.extend.AdapterRecipe.METADATA_KEY, recipeJson);
    Safetensors.write(file, tensors, metadata);
  }

  /** Writes the original Wan layout. */
  static void writeWan(Path file, Map<String, Tensor> factors, double alpha, String recipeJson) {
    Map<String, Tensor> tensors = new LinkedHashMap<>();
    factors.forEach(
        (name, t) -> {
          boolean down = name.endsWith(DOWN);
          String layer = name.substring(0, name.length() - (down ? DOWN : UP).length());
          String module = "diffusion_model." + wanModule(layer);
          tensors.put(module + (down ? ".lora_down.weight" : ".lora_up.weight"), t);
          if (down) {
            tensors.put(module + ".alpha", Tensor.of(new float[] {(float) alpha}));
          }
        });
    Map<String, String> metadata = new LinkedHashMap<>();
    metadata.put("format", "pt");
    metadata.put(dev.stepweave.core.extend.AdapterRecipe.METADATA_KEY, recipeJson);
    Safetensors.write(file, tensors, metadata);
  }

  /** The original Wan module of a diffusers layer name. */
  static String wanModule(String layer) {
    Matcher m = ATTENTION.matcher(layer);
    if (m.matches()) {
      String attention = m.group(2).equals("attn1") ? "self_attn" : "cross_attn";
      String projection =
          switch (m.group(3)) {
            case "to_q" -> "q";
            case "to_k" -> "k";
            case "to_v" -> "v";
            default -> "o";
          };
      return "blocks." + m.group(1) + "." + attention + "." + projection;
    }
    m = FFN.matcher(layer);
    if (m.matches()) {
      return "blocks." + m.group(1) + ".ffn." + (m.group(2).equals("net.2") ? "2" : "0");
    }
    return switch (layer) {
      case "condition_embedder.text_embedder.linear_1" -> "text_embedding.0";
      case "condition_embedder.text_embedder.linear_2" -> "text_embedding.2";
      case "condition_embedder.time_embedder.linear_1" -> "time_embedding.0";
      case "condition_embedder.time_embedder.linear_2" -> "time_embedding.2";
      case "condition_embedder.time_proj" -> "time_projection.1";
      case "proj_out" -> "head.head";
      default ->
          throw new IllegalArgumentException(
              "layer '" + layer + "' has no name in the original Wan LoRA layout");
    };
  }
}

package dev.stepweave.models.wan.lora;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stepweave.core.extend.AdapterRecipe;
import dev.stepweave.core.extend.InvalidAdapterException;
import dev.stepweave.models.wan.lora.AdapterLayout.LayerKeys;
import dev.stepweave.models.wan.transformer.LinearShape;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.TensorSource;
import java.io.IOException;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads a LoRA file's keys against a Wan transformer's layers, covering what the reference
 * converter (diffusers' Wan LoRA loader) covers, and refusing everything else with a one-line error
 * naming the file and the key:
 *
 * <ul>
 *   <li><b>diffusers / PEFT</b>: {@code transformer.<layer>.lora_A.weight} / {@code lora_B.weight}
 *       (also {@code base_model.model.} or no prefix), optional {@code lora_B.bias}; the scale is
 *       {@code lora_alpha / r} from the {@code lora_adapter_metadata} diffusers writes, else 1.
 *   <li><b>original Wan / ComfyUI</b>: {@code
 *       diffusion_model.blocks.N.self_attn.q.lora_down.weight} / {@code lora_up.weight} (or {@code
 *       lora_A}/{@code lora_B}) / {@code alpha} (scale {@code alpha / rank}) / {@code diff_b} (a
 *       bias delta), for self and cross attention, the FFN, {@code time_projection.1}, {@code
 *       head.head} (with {@code head.head.diff}, a full delta), {@code text_embedding.0/2} and
 *       {@code time_embedding.0/2}; musubi-tuner's {@code lora_unet_blocks_N_…} spelling of the
 *       block keys.
 * </ul>
 *
 * <p>As the reference does, norm {@code diff}/{@code diff_b} keys are dropped (they must be zeros)
 * and {@code time_projection} keys are dropped when the file has no {@code time_projection}
 * weights. Image-conditioning keys ({@code k_img}, {@code v_img}, {@code img_emb}) need an I2V
 * model; text-encoder keys are refused (adapters apply to the transformer only, so the
 * text-embedding cache never needs partitioning by adapter).
 */
final class WanLoraFormat {
  private static final String WAN_PREFIX = "diffusion_model.";
  private static final String MUSUBI_PREFIX = "lora_unet_";
  private static final String[] DIFFUSERS_PREFIXES = {"transformer.", "base_model.model.", ""};
  private static final String PEFT_METADATA = "lora_adapter_metadata";

  private static final Pattern WAN_ATTENTION =
      Pattern.compile("blocks\\.(\\d+)\\.(self_attn|cross_attn)\\.(q|k|v|o|k_img|v_img)");
  private static final Pattern WAN_FFN = Pattern.compile("blocks\\.(\\d+)\\.ffn\\.(0|2)");
  private static final Pattern WAN_EMBEDDING =
      Pattern.compile("(text_embedding|time_embedding)\\.(0|2)");
  private static final Pattern MUSUBI_BLOCK =
      Pattern.compile(
          "lora_unet_blocks_(\\d+)_(self_attn|cross_attn|ffn)_(q|k|v|o|k_img|v_img|0|2)\\.(.+)");

  private WanLoraFormat() {}

  /**
   * @param layers the transformer's adaptable layers with their widths
   * @throws InvalidAdapterException naming the file and the key or tensor that does not fit
   */
  static AdapterLayout read(TensorSource file, Map<String, LinearShape> layers) {
    String name = file.fileOf("").toString();
    if (file.keys().isEmpty()) {
      throw new InvalidAdapterException(name + ": holds no tensors");
    }
    for (String k : file.keys()) {
      if (k.startsWith("text_encoder") || k.startsWith("lora_te")) {
        throw new InvalidAdapterException(
            name
                + ": key '"
                + k
                + "' adapts the text encoder; adapters apply to the transformer only");
      }
    }
    boolean wan = file.keys().stream().anyMatch(k -> k.startsWith(WAN_PREFIX));
    boolean musubi = file.keys().stream().anyMatch(k -> k.startsWith(MUSUBI_PREFIX));
    Map<String, String> original = new TreeMap<>(); // original-format key -> stored key
    if (wan || musubi) {
      for (String k : file.keys()) {
        original.put(wanKey(name, k), k);
      }
    }
    AdapterLayout layout =
        wan || musubi ? readWan(name, file, original, layers) : readDiffusers(name, file, layers);
    check(name, file, layout, layers);
    return layout;
  }

  /** The original-format name of a stored key ({@code blocks.0.self_attn.q.lora_down.weight}). */
  private static String wanKey(String file, String key) {
    if (key.startsWith(WAN_PREFIX)) {
      return key.substring(WAN_PREFIX.length());
    }
    Matcher m = MUSUBI_BLOCK.matcher(key);
    if (m.matches()) {
      return "blocks." + m.group(1) + "." + m.group(2) + "." + m.group(3) + "." + m.group(4);
    }
    throw new InvalidAdapterException(
        file + ": key '" + key + "' is neither " + WAN_PREFIX + "… nor a musubi block key");
  }

  private static AdapterLayout readWan(
      String name, TensorSource file, Map<String, String> keys, Map<String, LinearShape> layers) {
    boolean hasTimeProjectionWeights =
        keys.keySet().stream()
            .anyMatch(k -> k.startsWith("time_projection") && k.endsWith(".weight"));
    String downSuffix =
        keys.keySet().stream().anyMatch(k -> k.contains(".lora_A.")) ? "lora_A" : "lora_down";
    String upSuffix =
        keys.keySet().stream().anyMatch(k -> k.contains(".lora_B.")) ? "lora_B" : "lora_up";
    Map<String, Parts> parts = new LinkedHashMap<>();
    for (var e : keys.entrySet()) {
      String k = e.getKey();
      String stored = e.getValue();
      if (k.contains("norm") && (k.endsWith(".diff") || k.endsWith(".diff_b"))) {
        requireZeros(name, file, stored);
        continue;
      }
      if (k.startsWith("time_projection") && !hasTimeProjectionWeights) {
        continue;
      }
      int dot = moduleEnd(k, downSuffix, upSuffix);
      if (dot < 0) {
        throw new InvalidAdapterException(name + ": unrecognised key '" + stored + "'");
      }
      String module = k.substring(0, dot);
      String suffix = k.substring(dot + 1);
      String layer = wanLayer(name, module, stored);
      Parts p = parts.computeIfAbsent(layer, l -> new Parts());
      if (suffix.equals(downSuffix + ".weight")) {
        p.down = stored;
      } else if (suffix.equals(upSuffix + ".weight")) {
        p.up = stored;
      } else if (suffix.equals("alpha")) {
        p.alpha = stored;
      } else if (suffix.equals("diff_b")) {
        p.bias = stored;
      } else if (suffix.equals("diff") && layer.equals("proj_out")) {
        p.fullDelta = stored;
      } else {
        throw new InvalidAdapterException(name + ": unsupported key '" + stored + "'");
      }
    }
    return new AdapterLayout("wan", toLayers(name, parts, 1f), recipe(name, file));
  }

  /** Where the module path of an original-format key ends, or -1. */
  private static int moduleEnd(String key, String down, String up) {
    for (String suffix :
        new String[] {"." + down + ".weight", "." + up + ".weight", ".alpha", ".diff_b", ".diff"}) {
      if (key.endsWith(suffix)) {
        return key.length() - suffix.length();
      }
    }
    return -1;
  }

  private static String wanLayer(String file, String module, String key) {
    Matcher m = WAN_ATTENTION.matcher(module);
    if (m.matches()) {
      String o = m.group(3);
      if (o.endsWith("_img")) {
        throw new InvalidAdapterException(
            file + ": key '" + key + "' adapts image cross-attention, which needs an I2V model");
      }
      String attn = m.group(2).equals("self_attn") ? "attn1" : "attn2";
      String target =
          switch (o) {
            case "q" -> "to_q";
            case "k" -> "to_k";
            case "v" -> "to_v";
            default -> "to_out.0";
          };
      return "blocks." + m.group(1) + "." + attn + "." + target;
    }
    m = WAN_FFN.matcher(module);
    if (m.matches()) {
      return "blocks." + m.group(1) + ".ffn." + (m.group(2).equals("0") ? "net.0.proj" : "net.2");
    }
    m = WAN_EMBEDDING.matcher(module);
    if (m.matches()) {
      String embedder = m.group(1).equals("text_embedding") ? "text_embedder" : "time_embedder";
      return "condition_embedder." + embedder + ".linear_" + (m.group(2).equals("0") ? 1 : 2);
    }
    return switch (module) {
      case "time_projection.1" -> "condition_embedder.time_proj";
      case "head.head" -> "proj_out";
      default -> {
        if (module.startsWith("img_emb")) {
          throw new InvalidAdapterException(
              file + ": key '" + key + "' adapts the image embedder, which needs an I2V model");
        }
        throw new InvalidAdapterException(file + ": key '" + key + "' targets no known layer");
      }
    };
  }

  private static AdapterLayout readDiffusers(
      String name, TensorSource file, Map<String, LinearShape> layers) {
    float scale = peftScale(name, file.metadata().get(PEFT_METADATA));
    Map<String, Parts> parts = new LinkedHashMap<>();
    for (String stored : file.keys()) {
      String k = stripDiffusersPrefix(stored);
      String layer;
      Parts p;
      if (k.endsWith(".lora_A.weight")) {
        layer = k.substring(0, k.length() - ".lora_A.weight".length());
        (p = parts.computeIfAbsent(layer, l -> new Parts())).down = stored;
      } else if (k.endsWith(".lora_B.weight")) {
        layer = k.substring(0, k.length() - ".lora_B.weight".length());
        (p = parts.computeIfAbsent(layer, l -> new Parts())).up = stored;
      } else if (k.endsWith(".lora_B.bias")) {
        layer = k.substring(0, k.length() - ".lora_B.bias".length());
        (p = parts.computeIfAbsent(layer, l -> new Parts())).bias = stored;
      } else if (k.endsWith(".alpha")) {
        layer = k.substring(0, k.length() - ".alpha".length());
        (p = parts.computeIfAbsent(layer, l -> new Parts())).alpha = stored;
      } else {
        throw new InvalidAdapterException(name + ": unrecognised key '" + stored + "'");
      }
      if (!layers.containsKey(layer)) {
        if (layer.contains("add_k_proj")
            || layer.contains("add_v_proj")
            || layer.contains("image_embedder")) {
          throw new InvalidAdapterException(
              name + ": key '" + stored + "' adapts image conditioning, which needs an I2V model");
        }
        throw new InvalidAdapterException(
            name + ": key '" + stored + "' targets no layer of this transformer ('" + layer + "')");
      }
    }
    return new AdapterLayout("diffusers", toLayers(name, parts, scale), recipe(name, file));
  }

  private static String stripDiffusersPrefix(String key) {
    for (String p : DIFFUSERS_PREFIXES) {
      if (!p.isEmpty() && key.startsWith(p)) {
        return key.substring(p.length());
      }
    }
    return key;
  }

  /**
   * {@code lora_alpha / r} of the PEFT config diffusers stores in the metadata (1 without one);
   * per-layer patterns are refused rather than guessed.
   */
  private static float peftScale(String file, String json) {
    if (json == null) {
      return 1f;
    }
    try {
      JsonNode n = new ObjectMapper().readTree(json);
      for (String pattern : new String[] {"rank_pattern", "alpha_pattern"}) {
        JsonNode p = n.get(pattern);
        if (p != null && !p.isNull() && !(p.isObject() && p.isEmpty())) {
          throw new InvalidAdapterException(
              file + ": metadata '" + PEFT_METADATA + "." + pattern + "' is not supported");
        }
      }
      JsonNode r = n.get("r");
      JsonNode alpha = n.get("lora_alpha");
      if (r == null
          || alpha == null
          || !r.isNumber()
          || !alpha.isNumber()
          || r.doubleValue() <= 0) {
        throw new InvalidAdapterException(
            file + ": metadata '" + PEFT_METADATA + "' needs numbers 'r' > 0 and 'lora_alpha'");
      }
      return (float) (alpha.doubleValue() / r.doubleValue());
    } catch (IOException e) {
      throw new InvalidAdapterException(file + ": metadata '" + PEFT_METADATA + "' is not JSON");
    }
  }

  private static Optional<AdapterRecipe> recipe(String name, TensorSource file) {
    String json = file.metadata().get(AdapterRecipe.METADATA_KEY);
    return json == null
        ? Optional.empty()
        : Optional.of(
            AdapterRecipe.parse(json, name + " metadata '" + AdapterRecipe.METADATA_KEY + "'"));
  }

  /** A layer's keys as they are found. */
  private static final class Parts {
    String down;
    String up;
    String alpha;
    String bias;
    String fullDelta;
  }

  private static Map<String, LayerKeys> toLayers(
      String name, Map<String, Parts> parts, float scale) {
    Map<String, LayerKeys> out = new TreeMap<>();
    parts.forEach(
        (layer, p) -> {
          if (p.fullDelta != null) {
            if (p.down != null || p.up != null) {
              throw new InvalidAdapterException(
                  name
                      + ": layer '"
                      + layer
                      + "' has both a full delta ('"
                      + p.fullDelta
                      + "') and low-rank factors");
            }
            out.put(layer, new LayerKeys(p.fullDelta, null, null, p.bias, 1f));
            return;
          }
          if (p.down == null || p.up == null) {
            String have =
                p.down != null ? p.down : p.up != null ? p.up : p.alpha != null ? p.alpha : p.bias;
            throw new InvalidAdapterException(
                name
                    + ": key '"
                    + have
                    + "' has no matching "
                    + (p.down == null ? "down (A)" : "up (B)")
                    + " factor");
          }
          out.put(layer, new LayerKeys(p.down, p.up, p.alpha, p.bias, scale));
        });
    return out;
  }

  /** Every factor's shape against its layer; alphas are scalars. */
  private static void check(
      String name, TensorSource file, AdapterLayout layout, Map<String, LinearShape> layers) {
    layout
        .layers()
        .forEach(
            (layer, k) -> {
              LinearShape s = layers.get(layer);
              if (s == null) {
                throw new InvalidAdapterException(
                    name
                        + ": key '"
                        + k.down()
                        + "' targets no layer of this transformer ('"
                        + layer
                        + "')");
              }
              int[] down = file.info(k.down()).shape();
              if (k.up() == null) {
                expect(name, k.down(), down, s.out(), s.in());
              } else {
                if (down.length != 2 || down[1] != s.in() || down[0] < 1) {
                  throw misfit(name, k.down(), down, "[r, " + s.in() + "]");
                }
                expect(name, k.up(), file.info(k.up()).shape(), s.out(), down[0]);
              }
              if (k.alpha() != null && Tensor.numel(file.info(k.alpha()).shape()) != 1) {
                throw misfit(name, k.alpha(), file.info(k.alpha()).shape(), "a scalar");
              }
              if (k.bias() != null) {
                expect(name, k.bias(), file.info(k.bias()).shape(), s.out());
              }
            });
  }

  private static void expect(String file, String key, int[] shape, int... expected) {
    if (!Arrays.equals(shape, expected)) {
      throw misfit(file, key, shape, Arrays.toString(expected));
    }
  }

  private static InvalidAdapterException misfit(String file, String key, int[] shape, String want) {
    return new InvalidAdapterException(
        file
            + ": tensor '"
            + key
            + "' has shape "
            + Arrays.toString(shape)
            + ", this model needs "
            + want);
  }

  private static void requireZeros(String name, TensorSource file, String key) {
    Tensor t = file.loadF32(key);
    float[] v = t.toFloatArray();
    for (float x : v) {
      if (x != 0f) {
        throw new InvalidAdapterException(
            name + ": norm delta '" + key + "' is not zero; norm deltas are not supported");
      }
    }
  }
}

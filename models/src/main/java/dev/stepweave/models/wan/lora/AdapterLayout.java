package dev.stepweave.models.wan.lora;

import dev.stepweave.core.extend.AdapterRecipe;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Where each layer's update sits in an adapter file, read from its header against one transformer
 * (see {@link WanLoraFormat}); nothing is loaded yet.
 *
 * @param format "diffusers" (diffusers/PEFT keys) or "wan" (original Wan / ComfyUI / musubi keys)
 * @param layers by transformer layer name
 * @param recipe the recipe in the file's metadata, if any
 */
record AdapterLayout(String format, Map<String, LayerKeys> layers, Optional<AdapterRecipe> recipe) {
  AdapterLayout {
    layers = Map.copyOf(layers);
  }

  /**
   * The keys of one layer's update.
   *
   * @param down the {@code [r, in]} factor, or a full {@code [out, in]} weight delta when {@code
   *     up} is null (PEFT's identity up factor, as the reference converter reads {@code
   *     head.head.diff})
   * @param up the {@code [out, r]} factor, or null
   * @param alpha a scalar alpha key, or null
   * @param bias a {@code [out]} bias delta key, or null
   * @param alphaScale the scale when the file gives no alpha key (diffusers metadata's {@code
   *     lora_alpha / r}, else 1)
   */
  record LayerKeys(String down, String up, String alpha, String bias, float alphaScale) {}

  int rank(dev.stepweave.tensor.io.TensorSource file) {
    return layers.values().stream().mapToInt(k -> file.info(k.down()).shape()[0]).max().orElse(0);
  }

  List<String> targets() {
    return layers.keySet().stream().sorted().toList();
  }
}

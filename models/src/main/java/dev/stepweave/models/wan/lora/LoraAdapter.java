package dev.stepweave.models.wan.lora;

import dev.stepweave.models.wan.transformer.LayerAdapter;
import dev.stepweave.models.wan.transformer.LayerUpdate;
import java.util.Map;

/**
 * An adapter's updates resident on the model's backend, in the activation dtype. Immutable; the
 * cache that loaded it decides when it goes.
 *
 * @param identity {@code name@version#load}: a new load (new addresses) is a new identity
 * @param layers by transformer layer name
 */
record LoraAdapter(String identity, Map<String, LayerUpdate> layers) implements LayerAdapter {
  LoraAdapter {
    layers = Map.copyOf(layers);
  }

  long byteSize() {
    return layers.values().stream().mapToLong(LayerUpdate::byteSize).sum();
  }
}

package dev.stepweave.core.runtime;

import dev.stepweave.core.card.ModelCard;
import dev.stepweave.core.loop.Loop;
import dev.stepweave.core.loop.LoopState;
import dev.stepweave.core.loop.ModelInstance;
import dev.stepweave.core.request.Request;
import dev.stepweave.tensor.Backend;
import java.util.Map;

/**
 * What the engine tests' fake models share: a card, loops by id, and no weights, components or
 * backend (their loops compute on the host).
 */
abstract class WeightlessModel implements ModelInstance {
  private final String instanceId;
  private final ModelCard card;

  WeightlessModel(String instanceId, ModelCard card) {
    this.instanceId = instanceId;
    this.card = card;
  }

  /** The loops by id. */
  abstract Map<String, ? extends Loop<? extends LoopState>> loops();

  @Override
  public String instanceId() {
    return instanceId;
  }

  @Override
  public ModelCard card() {
    return card;
  }

  /** The CPU's, for what the engine asks of a backend (the steps here compute nothing on it). */
  @Override
  public Backend backend() {
    return BACKEND;
  }

  private static final Backend BACKEND = new dev.stepweave.tensor.cpu.CpuBackend();

  @Override
  public String samplerFor(Request request) {
    return request.params().sampler().orElse("euler");
  }

  @Override
  public <T> T component(String id, Class<T> type) {
    throw new IllegalArgumentException("no components");
  }

  @Override
  public Loop<? extends LoopState> loop(String loopId) {
    return loops().get(loopId);
  }
}

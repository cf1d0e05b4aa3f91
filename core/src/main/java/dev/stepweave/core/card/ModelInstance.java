package dev.stepweave.core.card;

import dev.stepweave.tensor.Backend;

/**
 * A resident, loaded card: its components on one backend. A request may run several of the card's
 * loops against one instance; instances hold weights only, never per-request state.
 */
public interface ModelInstance {

  /** Unique among the instances of a pool. */
  String instanceId();

  ModelCard card();

  Backend backend();

  /** The weights version; bumps when weights are swapped in place. */
  default long weightsVersion() {
    return 0;
  }

  /**
   * A loaded component by card id.
   *
   * @throws IllegalArgumentException when the card has no such component or it is of another type
   */
  <T> T component(String id, Class<T> type);
}

package dev.stepweave.core.card;

/**
 * The consistency ladder (seed §9.2): how close a run is held to its reference. Declared from the
 * strictest to the loosest: a run that holds a rung also holds every looser one.
 */
public enum ConsistencyRung {
  /** Component parity against the reference implementation. */
  C0,
  /** Loop parity: the whole trajectory with a fixed seed. */
  C1,
  /** Behavioural identity between the serving and the training forward. */
  C2,
  /** Distribution parity under allowed nondeterminism. */
  C3,
  /** Artefact quality. */
  C4;

  /** Whether a run held to this rung is as strict as {@code required} asks. */
  public boolean satisfies(ConsistencyRung required) {
    return ordinal() <= required.ordinal();
  }
}

package dev.stepweave.core.card;

/** The consistency ladder (seed §9.2): how close a run is held to its reference. */
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
  C4
}

package dev.stepweave.core.cache;

/** Which unreferenced entry a full cache drops first. */
public enum EvictionPolicy {
  /** The oldest inserted: feature caches, where a prompt's popularity is not known. */
  FIFO,
  /** The least recently acquired. */
  LRU
}

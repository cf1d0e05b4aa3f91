package dev.stepweave.core.memory;

/** The sum of a set of held reservations. */
public record Usage(int reservations, long memoryBytes, double computeMillis, long cacheBlocks) {}

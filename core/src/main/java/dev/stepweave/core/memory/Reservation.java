package dev.stepweave.core.memory;

/**
 * What one request holds while it runs, reserved at admission and given back when it ends: its
 * device memory (resident state plus worst-case peak activation), its predicted compute and its
 * cache blocks.
 */
public record Reservation(
    String requestId, long memoryBytes, double computeMillis, int cacheBlocks) {}

package dev.stepweave.cuda.graph;

/**
 * What a {@link dev.stepweave.cuda.CudaBackend}'s graph cache did since it opened, and what it
 * holds now.
 *
 * @param graphs recorded graphs held now
 * @param replays calls answered by replaying a recorded graph
 * @param recordings graphs recorded (each after one eager warm-up run)
 * @param evictions graphs freed to stay within the capacity
 * @param poolBytes device memory the held graphs keep (static buffers and their bodies' tensors)
 */
public record GraphStats(
    int graphs, long replays, long recordings, long evictions, long poolBytes) {}

package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Backend.StepMemory;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * A video encode in progress: the input, which temporal chunk comes next, the causal cache and the
 * encoded chunks so far. Chunk 0 is the first frame alone, every later chunk the next {@value
 * #CHUNK_FRAMES} frames (the last may be shorter), exactly as the reference splits them. Every
 * chunk runs in the state's {@link StepMemory}, so what it made dies with it and the cache frames
 * it replaced as soon as they are replaced; a finished encode keeps only its chunks.
 */
public final class EncodeState {
  /** Frames per chunk after the first; the reference's fixed chunking, not a config dimension. */
  public static final int CHUNK_FRAMES = 4;

  private final Tensor video;
  private final CausalCache cache;
  private final StepMemory memory;
  private final List<Tensor> encoded = new ArrayList<>();
  private int nextChunk;

  EncodeState(Tensor video, CausalCache cache, StepMemory memory) {
    this.video = video;
    this.cache = cache;
    this.memory = memory;
    cache.releaseWith(
        CausalCache.releasingUnlessHeld(
            memory,
            () ->
                Stream.of(Stream.of(video), encoded.stream(), cache.remembered().stream())
                    .flatMap(t -> t)));
  }

  /** The encoder's input: the video, its pixel patches folded into channels (if it has any). */
  public Tensor video() {
    return video;
  }

  public CausalCache cache() {
    return cache;
  }

  /** The encoded chunks so far, each {@code [B, 2·z_dim, t, H', W']}. */
  public List<Tensor> encoded() {
    return List.copyOf(encoded);
  }

  public int nextChunk() {
    return nextChunk;
  }

  public int chunkCount() {
    return 1 + (video.dim(2) - 1) / CHUNK_FRAMES;
  }

  public boolean isDone() {
    return nextChunk == chunkCount();
  }

  /** The frames of the next chunk, a view of the input. */
  Tensor nextFrames() {
    int start = nextChunk == 0 ? 0 : 1 + CHUNK_FRAMES * (nextChunk - 1);
    int end = nextChunk == 0 ? 1 : Math.min(start + CHUNK_FRAMES, video.dim(2));
    return video.slice(2, start, end);
  }

  void accept(Tensor chunk) {
    encoded.add(chunk);
    nextChunk++;
    if (isDone()) {
      cache.clear(); // no chunk follows
    }
  }

  /**
   * Runs one chunk's {@code body} in this encode's memory (see {@link Backend#stepMemory}): the
   * encoded chunks and the cache's frames survive.
   */
  void step(Runnable body) {
    memory.step(
        body,
        () -> {
          List<Tensor> live = new ArrayList<>(encoded);
          live.addAll(cache.remembered());
          return live;
        });
  }
}

package dev.stepweave.media;

import dev.stepweave.tensor.Tensor;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.jcodec.common.VideoEncoder.EncodedFrame;

/**
 * An MP4 coded while its frames arrive: chunks of frames are handed over in order as a decoder
 * completes them, each group of pictures is coded (on the common pool) as soon as its frames are
 * in, and {@link #finish} codes the last group, muxes and writes the file — the same bytes {@link
 * Mp4Writer#write} writes for the whole video, since the groups are the same. What is left after
 * the last chunk is one group's coding instead of the whole video's.
 *
 * <p>A stream that misses frames (a gap in the chunks' indices) is {@link #broken}: its owner
 * writes the video the ordinary way instead. Thread-safe: chunks may come on another thread than
 * {@link #finish}.
 */
public final class Mp4Stream {
  private final List<float[]> frames = new ArrayList<>();
  private final List<CompletableFuture<List<EncodedFrame>>> groups = new ArrayList<>();
  private int height = -1;
  private int width = -1;
  private boolean broken;

  /**
   * Takes frames {@code first .. first + n - 1} ({@code chunk [n, H, W, 3]} in [0, 1]) and starts
   * coding each group they complete. A chunk out of order or of another size breaks the stream.
   */
  public synchronized void accept(int first, Tensor chunk) {
    if (broken) {
      return;
    }
    RgbFrames.requireVideo(chunk);
    if (first != frames.size()
        || (height >= 0 && (chunk.dim(1) != height || chunk.dim(2) != width))) {
      broken = true;
      notifyAll();
      return;
    }
    height = chunk.dim(1);
    width = chunk.dim(2);
    if ((height & ~1) == 0 || (width & ~1) == 0) {
      broken = true;
      notifyAll();
      return;
    }
    for (int f = 0; f < chunk.dim(0); f++) {
      frames.add(RgbFrames.frame(chunk, f));
    }
    int interval = Mp4Writer.KEY_FRAME_INTERVAL;
    while (frames.size() >= (groups.size() + 1) * interval) {
      startGroup(groups.size() * interval, (groups.size() + 1) * interval);
    }
    notifyAll();
  }

  /** Whether the stream missed frames (its owner must write the video otherwise). */
  public synchronized boolean broken() {
    return broken;
  }

  /**
   * Waits up to {@code timeout} until {@code count} frames have arrived (chunks may still be on
   * their way when the video's result is in); false when they did not, the stream broke, or the
   * thread was interrupted (its flag is set again).
   */
  public synchronized boolean awaitFrames(int count, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!broken && frames.size() < count) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return false;
      }
      try {
        wait(Math.max(1, left / 1_000_000));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
    return !broken && frames.size() == count;
  }

  /**
   * Codes the last group, then writes the video atomically at {@code target} with {@code
   * metadataJson} (null for none).
   *
   * @throws IllegalStateException when the stream is broken or empty
   */
  public void finish(Path target, int fps, String metadataJson) throws IOException {
    if (fps < 1) {
      throw new IllegalArgumentException("fps must be >= 1, got " + fps);
    }
    List<CompletableFuture<List<EncodedFrame>>> all;
    synchronized (this) {
      if (broken || frames.isEmpty()) {
        throw new IllegalStateException("no complete stream of frames to write");
      }
      int done = groups.size() * Mp4Writer.KEY_FRAME_INTERVAL;
      if (done < frames.size()) {
        startGroup(done, frames.size());
      }
      all = List.copyOf(groups);
    }
    Mp4Writer.checkWritable(target);
    List<List<EncodedFrame>> coded = new ArrayList<>(all.size());
    try {
      for (CompletableFuture<List<EncodedFrame>> g : all) {
        coded.add(g.join());
      }
    } catch (CompletionException e) {
      throw e.getCause() instanceof RuntimeException r ? r : e;
    }
    int h = height & ~1;
    int w = width & ~1;
    AtomicOutput.writeFile(target, tmp -> Mp4Writer.mux(tmp, coded, fps, metadataJson, h, w));
  }

  private void startGroup(int from, int to) {
    List<float[]> group = List.copyOf(frames.subList(from, to));
    int h = height;
    int w = width;
    groups.add(
        CompletableFuture.supplyAsync(
            () -> Mp4Writer.encodeGroup(f -> group.get(f - from), from, to, h, w)));
  }
}

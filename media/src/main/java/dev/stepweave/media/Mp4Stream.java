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
 * completes them, and each frame is coded (on the common pool) as soon as it is in, by its group of
 * pictures' encoder — the groups in parallel, each group's frames in order — so {@link #finish}
 * only waits for the frames still being coded, then muxes and writes the file: the same bytes
 * {@link Mp4Writer#write} writes for the whole video, since the groups and their encoders are the
 * same. A frame is not kept once coded.
 *
 * <p>A stream that misses frames (a gap in the chunks' indices) is {@link #broken}: its owner
 * writes the video the ordinary way instead. Thread-safe: chunks may come on another thread than
 * {@link #finish}.
 */
public final class Mp4Stream {
  private final List<GroupCoding> groups = new ArrayList<>();
  private int received;
  private int height = -1;
  private int width = -1;
  private boolean broken;

  /** One group's encoder and its frames' coding, chained so they run one after another. */
  private static final class GroupCoding {
    private final Mp4Writer.GroupEncoder encoder;
    private final List<EncodedFrame> coded = new ArrayList<>();
    private CompletableFuture<Void> tail = CompletableFuture.completedFuture(null);

    GroupCoding(int height, int width) {
      encoder = new Mp4Writer.GroupEncoder(height, width);
    }

    void add(float[] rgb) {
      tail = tail.thenRunAsync(() -> coded.add(encoder.encode(rgb)));
    }

    CompletableFuture<List<EncodedFrame>> done() {
      return tail.thenApply(v -> coded);
    }
  }

  /**
   * Takes frames {@code first .. first + n - 1} ({@code chunk [n, H, W, 3]} in [0, 1]) and starts
   * coding each. A chunk out of order or of another size breaks the stream.
   */
  public synchronized void accept(int first, Tensor chunk) {
    if (broken) {
      return;
    }
    RgbFrames.requireVideo(chunk);
    if (first != received || (height >= 0 && (chunk.dim(1) != height || chunk.dim(2) != width))) {
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
      if (received % Mp4Writer.KEY_FRAME_INTERVAL == 0) {
        groups.add(new GroupCoding(height, width));
      }
      groups.getLast().add(RgbFrames.frame(chunk, f));
      received++;
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
    while (!broken && received < count) {
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
    return !broken && received == count;
  }

  /**
   * Waits for the frames still being coded, then writes the video atomically at {@code target} with
   * {@code metadataJson} (null for none).
   *
   * @throws IllegalStateException when the stream is broken or empty
   */
  public void finish(Path target, int fps, String metadataJson) throws IOException {
    if (fps < 1) {
      throw new IllegalArgumentException("fps must be >= 1, got " + fps);
    }
    List<CompletableFuture<List<EncodedFrame>>> all;
    synchronized (this) {
      if (broken || received == 0) {
        throw new IllegalStateException("no complete stream of frames to write");
      }
      all = groups.stream().map(GroupCoding::done).toList();
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
}

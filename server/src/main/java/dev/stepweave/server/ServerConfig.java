package dev.stepweave.server;

import java.nio.file.Path;
import java.time.Duration;

/**
 * Limits and places of one server. Every limit bounds what a single HTTP call can make the server
 * hold or compute.
 *
 * @param artifactDir where finished videos and images are written; null for a fresh temp directory
 * @param maxBodyBytes largest request body accepted (413 beyond); a video call may add one input
 *     image to it ({@link #maxVideoBodyBytes})
 * @param maxImageBytes largest input image file ({@code input_reference}) accepted, after any
 *     base64 decoding (400 beyond)
 * @param maxPromptChars longest prompt (and negative prompt)
 * @param maxImages largest {@code n} of one image request
 * @param maxWidth largest frame width in pixels
 * @param maxHeight largest frame height in pixels
 * @param maxFrames largest frame count of one video
 * @param maxSteps largest denoising step count
 * @param maxPendingJobs jobs queued or running at once; more are refused with 429
 * @param maxExchanges HTTP calls in progress at once (event streams included); more get 503
 * @param drainTimeout how long a drain waits for running jobs before cancelling them
 */
public record ServerConfig(
    Path artifactDir,
    int maxBodyBytes,
    int maxImageBytes,
    int maxPromptChars,
    int maxImages,
    int maxWidth,
    int maxHeight,
    int maxFrames,
    int maxSteps,
    int maxPendingJobs,
    int maxExchanges,
    Duration drainTimeout) {

  public ServerConfig {
    if (maxBodyBytes < 1
        || maxImageBytes < 1
        || maxPromptChars < 1
        || maxImages < 1
        || maxWidth < 16
        || maxHeight < 16
        || maxFrames < 1
        || maxSteps < 1
        || maxPendingJobs < 1
        || maxExchanges < 1
        || drainTimeout.isNegative()) {
      throw new IllegalArgumentException("server limits must be positive");
    }
  }

  /**
   * 1 MiB bodies, 10 MiB input images, 4000-char prompts, up to 4 images, 1920×1920, 241 frames,
   * 100 steps.
   */
  public static ServerConfig defaults() {
    return new ServerConfig(
        null, 1 << 20, 10 << 20, 4000, 4, 1920, 1920, 241, 100, 64, 256, Duration.ofMinutes(10));
  }

  /**
   * The largest body of {@code POST /v1/videos}: {@link #maxBodyBytes} plus one input image of
   * {@link #maxImageBytes} as a base64 data URL (a third larger than the file), so that an image
   * over its own limit is refused naming it rather than as an oversized body.
   */
  public int maxVideoBodyBytes() {
    long dataUrl = 4L * ((maxImageBytes + 2L) / 3) + 64;
    return (int) Math.min(Integer.MAX_VALUE, maxBodyBytes + dataUrl);
  }

  public ServerConfig withMaxImageBytes(int bytes) {
    return new ServerConfig(
        artifactDir,
        maxBodyBytes,
        bytes,
        maxPromptChars,
        maxImages,
        maxWidth,
        maxHeight,
        maxFrames,
        maxSteps,
        maxPendingJobs,
        maxExchanges,
        drainTimeout);
  }

  public ServerConfig withArtifactDir(Path dir) {
    return new ServerConfig(
        dir,
        maxBodyBytes,
        maxImageBytes,
        maxPromptChars,
        maxImages,
        maxWidth,
        maxHeight,
        maxFrames,
        maxSteps,
        maxPendingJobs,
        maxExchanges,
        drainTimeout);
  }

  public ServerConfig withMaxPendingJobs(int n) {
    return new ServerConfig(
        artifactDir,
        maxBodyBytes,
        maxImageBytes,
        maxPromptChars,
        maxImages,
        maxWidth,
        maxHeight,
        maxFrames,
        maxSteps,
        n,
        maxExchanges,
        drainTimeout);
  }

  public ServerConfig withDrainTimeout(Duration timeout) {
    return new ServerConfig(
        artifactDir,
        maxBodyBytes,
        maxImageBytes,
        maxPromptChars,
        maxImages,
        maxWidth,
        maxHeight,
        maxFrames,
        maxSteps,
        maxPendingJobs,
        maxExchanges,
        timeout);
  }
}

package dev.stepweave.core.request;

import java.time.Duration;

/** Typed events of one request, in the order they happen. */
public sealed interface RequestEvent {
  String requestId();

  /** The event's wire name ("request.step", "artifact.ready", …). */
  String type();

  record Queued(String requestId) implements RequestEvent {
    public String type() {
      return "request.queued";
    }
  }

  record Started(String requestId, String modelId) implements RequestEvent {
    public String type() {
      return "request.started";
    }
  }

  /**
   * One step of one loop finished.
   *
   * @param loopId the loop ("denoise", "vae_decode", …)
   * @param step steps done in this loop (1-based)
   * @param totalSteps steps this loop will run
   * @param elapsed time spent in this loop so far
   */
  record Step(String requestId, String loopId, int step, int totalSteps, Duration elapsed)
      implements RequestEvent {
    public String type() {
      return "request.step";
    }
  }

  record Completed(String requestId, Duration elapsed) implements RequestEvent {
    public String type() {
      return "request.completed";
    }
  }

  /** The request failed; {@code message} is one line. */
  record Failed(String requestId, String message) implements RequestEvent {
    public String type() {
      return "request.failed";
    }
  }

  record Cancelled(String requestId, String loopId, int stepsDone) implements RequestEvent {
    public String type() {
      return "request.cancelled";
    }
  }

  record ArtifactReady(String requestId, Artifact artifact) implements RequestEvent {
    public String type() {
      return "artifact.ready";
    }
  }

  /**
   * Final frames as the decoder completes them (only when the request's output asks, {@link
   * OutputSpec#frames}): chunks arrive in order and together make the main artifact's frames.
   *
   * @param first the index of the chunk's first frame in the video
   * @param frames {@code [n, H, W, 3]} in [0, 1], the main artifact's values
   */
  record FramesDecoded(String requestId, int first, dev.stepweave.tensor.Tensor frames)
      implements RequestEvent {
    public String type() {
      return "media.frames";
    }
  }

  /**
   * A cheap preview of the current latents (a latent-space RGB projection, not a VAE decode).
   *
   * @param preview {@code [H', W', 3]} in [0, 1]
   */
  record MediaPreview(String requestId, int step, dev.stepweave.tensor.Tensor preview)
      implements RequestEvent {
    public String type() {
      return "media.preview";
    }
  }
}

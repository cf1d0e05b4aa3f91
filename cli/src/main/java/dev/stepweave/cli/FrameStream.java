package dev.stepweave.cli;

import dev.stepweave.core.request.Request;
import dev.stepweave.core.request.RequestEvent;
import dev.stepweave.media.Mp4Stream;
import java.util.concurrent.Flow;

/**
 * An MP4 output coded while the video decodes: the request asks for {@code media.frames} events and
 * each chunk goes to an {@link Mp4Stream}, so that once the result is in only the last group of
 * pictures is left to code.
 */
final class FrameStream implements Flow.Subscriber<RequestEvent> {
  private final Mp4Stream mp4 = new Mp4Stream();

  /** A stream for {@code job} when its output is an MP4 video, else null. */
  static FrameStream forJob(GenerationOptions.Job job) {
    boolean video = job.request().params().frames() > 1;
    return video && job.target().format() == dev.stepweave.media.OutputFormat.MP4
        ? new FrameStream()
        : null;
  }

  /** {@code request} asking for the frame events this stream codes. */
  static Request asking(Request request) {
    return request.toBuilder().output(request.output().streamingFrames()).build();
  }

  Mp4Stream mp4() {
    return mp4;
  }

  @Override
  public void onSubscribe(Flow.Subscription s) {
    s.request(Long.MAX_VALUE);
  }

  @Override
  public void onNext(RequestEvent e) {
    if (e instanceof RequestEvent.FramesDecoded f) {
      mp4.accept(f.first(), f.frames());
    }
  }

  @Override
  public void onError(Throwable t) {}

  @Override
  public void onComplete() {}
}

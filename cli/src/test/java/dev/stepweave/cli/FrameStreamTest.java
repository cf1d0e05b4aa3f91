package dev.stepweave.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.request.RequestEvent;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.GenerationResult;
import dev.stepweave.media.Mp4Reader;
import dev.stepweave.media.Mp4Writer;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Flow;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A video's frames streamed as the decoder completes them are the final artifact's frames, chunk by
 * chunk in order; that artifact (assembled from the streamed chunks) is the video the same request
 * decodes without streaming; and the MP4 coded from them while the rest decoded is the one coded
 * from the artifact.
 */
class FrameStreamTest {
  @TempDir Path tmp;

  @Test
  void streamedChunksAreTheArtifactsFramesAndCodeTheSameVideo() throws Exception {
    var params =
        new DiffusionParams(2, 5.0, 7, 32, 32, 17, 8, "", Optional.empty(), Optional.empty());
    Request request =
        Request.builder(TaskType.T2V, params).id("streamed").prompt("a red ball").build();
    List<RequestEvent.FramesDecoded> chunks = new ArrayList<>();
    FrameStream stream = new FrameStream();
    GenerationResult result;
    GenerationResult unstreamed;
    try (WanModel model = WanModel.load(GenerateOutputsTest.TINY, new CpuBackend());
        Engine engine = new Engine(model)) {
      var handle = engine.submit(FrameStream.asking(request));
      handle.events().subscribe(collecting(chunks));
      handle.events().subscribe(stream);
      result = handle.result().get();
      unstreamed =
          engine
              .submit(
                  Request.builder(TaskType.T2V, params).id("whole").prompt("a red ball").build())
              .result()
              .get();
    }
    Tensor frames = result.artifact(Artifact.VideoArtifact.class).frames();
    assertArrayEquals(
        unstreamed.artifact(Artifact.VideoArtifact.class).frames().toFloatArray(),
        frames.toFloatArray(),
        "the video assembled from the streamed chunks is the one decoded whole");
    assertTrue(stream.mp4().awaitFrames(17, Duration.ofSeconds(10)), "every frame arrived");
    synchronized (chunks) {
      // A causal VAE's latent frames: 1 output frame, then 4 each.
      assertEquals(List.of(0, 1, 5, 9, 13), chunks.stream().map(c -> c.first()).toList());
      for (RequestEvent.FramesDecoded c : chunks) {
        Tensor expected = frames.slice(0, c.first(), c.first() + c.frames().dim(0));
        assertArrayEquals(
            expected.toFloatArray(), c.frames().toFloatArray(), "frames " + c.first());
      }
    }
    Path streamed = tmp.resolve("streamed.mp4");
    Path whole = tmp.resolve("whole.mp4");
    stream.mp4().finish(streamed, 8, null);
    Mp4Writer.write(whole, frames, 8);
    assertArrayEquals(
        Mp4Reader.read(whole).frames().toFloatArray(),
        Mp4Reader.read(streamed).frames().toFloatArray());
  }

  private static Flow.Subscriber<RequestEvent> collecting(List<RequestEvent.FramesDecoded> into) {
    return new Flow.Subscriber<>() {
      @Override
      public void onSubscribe(Flow.Subscription s) {
        s.request(Long.MAX_VALUE);
      }

      @Override
      public void onNext(RequestEvent e) {
        if (e instanceof RequestEvent.FramesDecoded f) {
          synchronized (into) {
            into.add(f);
          }
        }
      }

      @Override
      public void onError(Throwable t) {}

      @Override
      public void onComplete() {}
    };
  }
}

package dev.stepweave.models.wan;

import dev.stepweave.core.card.GenerationDefaults;
import dev.stepweave.core.card.ModelCard;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.request.TaskChoice;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.GenerationResult;
import dev.stepweave.models.wan.embedded.EmbeddedWan;
import dev.stepweave.tensor.Backend;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.ExecutionException;

/**
 * The shortest way to generate from Java: a Wan checkpoint loaded onto a backend with an {@link
 * Engine} over it. {@link #video} runs a text-to-video request at the card's defaults; {@link
 * #generate} runs any {@link Request}; {@link #engine} and {@link #model} give the whole API
 * (events, cancellation, checkpoints, adapters).
 */
public final class WanGenerator implements AutoCloseable {
  private final WanModel model;
  private final Engine engine;

  private WanGenerator(WanModel model, Engine engine) {
    this.model = model;
    this.engine = engine;
  }

  /**
   * Loads the diffusers-format Wan checkpoint in {@code checkpoint} onto {@code backend}.
   *
   * @throws dev.stepweave.tensor.io.CheckpointException naming the file or field that is wrong
   */
  public static WanGenerator open(Path checkpoint, Backend backend) {
    WanModel model = WanModel.load(checkpoint, backend);
    try {
      return new WanGenerator(model, new Engine(model));
    } catch (RuntimeException e) {
      model.close();
      throw e;
    }
  }

  /**
   * The embedded tiny model ({@link EmbeddedWan}: trained here on shapes captions; written to the
   * cache directory on first use), loaded onto {@code backend}.
   */
  public static WanGenerator embedded(Backend backend) {
    return open(EmbeddedWan.ensure(), backend);
  }

  /** The card's default settings with {@code seed}: its size, frames, fps, steps and guidance. */
  public DiffusionParams defaults(long seed) {
    GenerationDefaults d = model.card().defaults();
    return new DiffusionParams(
        d.steps(),
        d.guidance(),
        seed,
        d.width(),
        d.height(),
        d.frames(),
        d.fps(),
        "",
        Optional.empty(),
        Optional.empty());
  }

  /**
   * A video of {@code prompt} at the card's defaults, from the noise of {@code seed}.
   *
   * @throws dev.stepweave.core.request.InvalidRequestException when the card serves no
   *     text-to-video task
   */
  public Artifact.VideoArtifact video(String prompt, long seed) throws InterruptedException {
    Request request =
        Request.text(TaskChoice.forVideo(model.card(), false, "an image"), prompt, defaults(seed));
    return generate(request).artifact(Artifact.VideoArtifact.class);
  }

  /**
   * Runs {@code request} to its end.
   *
   * @throws dev.stepweave.core.request.InvalidRequestException for a request this model cannot run
   * @throws RuntimeException what the run failed with
   */
  public GenerationResult generate(Request request) throws InterruptedException {
    try {
      return engine.submit(request).result().get();
    } catch (ExecutionException e) {
      throw e.getCause() instanceof RuntimeException r
          ? r
          : new IllegalStateException(e.getCause().getMessage(), e.getCause());
    }
  }

  /** The model's card. */
  public ModelCard card() {
    return model.card();
  }

  /** The engine the requests run on. */
  public Engine engine() {
    return engine;
  }

  /** The loaded model. */
  public WanModel model() {
    return model;
  }

  /** Stops the engine and releases the weights. */
  @Override
  public void close() {
    try {
      engine.close();
    } finally {
      model.close();
    }
  }
}

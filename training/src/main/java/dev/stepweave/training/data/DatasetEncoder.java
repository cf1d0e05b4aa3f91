package dev.stepweave.training.data;

import dev.stepweave.core.card.GenerationDefaults;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.models.text.TextEmbeddings;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.models.wan.vae.WanVae;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Tensor;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.function.IntConsumer;

/**
 * Encodes a dataset through a loaded model's own serving components, so training sees what serving
 * computes: the caption through the tokenizer and text encoder exactly as the {@code text_encode}
 * loop does (cut to its length, zero-padded to the length serving pads it to), the clip through the
 * VAE encoder as the {@code vae_encode} loop does (posterior mean, normalised with the VAE's latent
 * statistics). Each clip must be a size the model serves: its frames and size are checked as a
 * request for them would be.
 */
public final class DatasetEncoder {
  private final WanModel model;

  public DatasetEncoder(WanModel model) {
    this.model = model;
  }

  /**
   * One sample. Throws an IllegalArgumentException naming {@code id} when the model would refuse a
   * request of the clip's size or frame count.
   */
  public LatentSample encode(String id, String caption, RgbClip clip) {
    Request request = requestFor(id, caption, clip);
    int length = model.maxSequenceLength(request);
    Tensor text = embed(caption, length);
    WanVae vae = model.vae();
    Tensor video = model.backend().upload(clip.toVaeInput(), DType.F32);
    Tensor latents = vae.normalize(vae.encode(video).mean()); // the posterior's mode, as serving
    return new LatentSample(id, caption, host(latents).select(0, 0), host(text).select(0, 0));
  }

  /** The empty prompt's embedding {@code [1, L, D]}: guidance's unconditional branch. */
  public Tensor negativePromptEmbeds(int maxSequenceLength) {
    return host(embed("", maxSequenceLength)).select(0, 0);
  }

  /**
   * Encodes every entry of {@code folder} into the empty directory {@code out}.
   *
   * @param progress told the count of samples done after each one
   */
  public ShardIndex prepare(
      DatasetFolder folder, ClipDecoder decoder, Path out, int perShard, IntConsumer progress)
      throws IOException {
    LatentShards.Writer writer = new LatentShards.Writer(out, perShard);
    int length = -1;
    int done = 0;
    for (DatasetEntry e : folder.entries()) {
      RgbClip clip;
      try {
        clip = decoder.decode(folder.media(e));
      } catch (IOException | IllegalArgumentException ex) {
        throw new IllegalArgumentException("entry '" + e.id() + "': " + ex.getMessage(), ex);
      }
      LatentSample s = encode(e.id(), e.caption(), clip);
      length = s.promptEmbeds().dim(0);
      writer.add(s);
      progress.accept(++done);
    }
    writer.finish(
        model.card().modelId(),
        model.weightsVersion(),
        folder.contentHash(),
        length,
        negativePromptEmbeds(length));
    return ShardIndex.read(out);
  }

  private Tensor embed(String caption, int length) {
    return TextEmbeddings.encodePrompts(
        model.tokenizer(), model.textEncoder(), List.of(caption), length);
  }

  /** A text-to-video request at the clip's size, checked by the model as serving checks it. */
  private Request requestFor(String id, String caption, RgbClip clip) {
    GenerationDefaults d = model.card().defaults();
    try {
      Request request =
          Request.text(
              TaskType.T2V,
              caption,
              new DiffusionParams(
                  d.steps(),
                  d.guidance(),
                  0,
                  clip.width(),
                  clip.height(),
                  clip.frames(),
                  d.fps(),
                  "",
                  Optional.empty(),
                  Optional.empty()));
      request.validate();
      model.validate(request);
      return request;
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "entry '"
              + id
              + "' ("
              + clip.frames()
              + " frames of "
              + clip.width()
              + "x"
              + clip.height()
              + "): "
              + e.getMessage(),
          e);
    }
  }

  private Tensor host(Tensor t) {
    Backend b = model.backend();
    return t.device().kind() == Device.Kind.CPU && t.dtype() == DType.F32 ? t : b.download(t);
  }
}

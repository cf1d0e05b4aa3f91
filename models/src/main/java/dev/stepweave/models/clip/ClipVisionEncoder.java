package dev.stepweave.models.clip;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The CLIP vision tower (transformers' {@code CLIPVisionModel}) up to what Wan's image-to-video
 * pipeline reads from it: {@code hidden_states[-2]}, the output of the second-to-last encoder
 * layer.
 *
 * <p>transformers numbers hidden states from the encoder's input: {@code hidden_states[0]} is the
 * embeddings (class token and patches, plus positions) after {@code pre_layrnorm}, {@code
 * hidden_states[i]} the output of layer {@code i - 1}; with N layers {@code hidden_states[-2]} is
 * therefore the output of layer N-2, after N-1 layers have run. The last layer and {@code
 * post_layernorm} (which only feeds the pooled output) never contribute to it: their tensors are
 * checked against the config but not loaded.
 */
public final class ClipVisionEncoder {
  private final ClipVisionConfig config;
  private final Backend backend;
  private final Tensor patchWeight; // [hidden, channels, 1, patch, patch]: a 2-D kernel as 3-D
  private final Tensor classEmbedding; // [1, 1, hidden]
  private final Tensor positionEmbedding; // [positions, hidden]
  private final Tensor preNormWeight;
  private final Tensor preNormBias;
  private final List<ClipEncoderLayer> layers;

  private ClipVisionEncoder(
      ClipVisionConfig config,
      Backend backend,
      Tensor patchWeight,
      Tensor classEmbedding,
      Tensor positionEmbedding,
      Tensor preNormWeight,
      Tensor preNormBias,
      List<ClipEncoderLayer> layers) {
    this.config = config;
    this.backend = backend;
    this.patchWeight = patchWeight;
    this.classEmbedding = classEmbedding;
    this.positionEmbedding = positionEmbedding;
    this.preNormWeight = preNormWeight;
    this.preNormBias = preNormBias;
    this.layers = List.copyOf(layers);
  }

  /**
   * Loads the embeddings, {@code pre_layrnorm} (the reference's spelling) and the first N-1 layers,
   * checks the last layer and {@code post_layernorm}, and fails on any other tensor.
   */
  public static ClipVisionEncoder load(ClipVisionConfig config, Weights weights) {
    int hidden = config.hiddenSize();
    int patch = config.patchSize();
    Weights embeddings = weights.scope("embeddings");
    Tensor patchWeight =
        embeddings
            .take("patch_embedding.weight", hidden, config.numChannels(), patch, patch)
            .reshape(hidden, config.numChannels(), 1, patch, patch);
    Tensor classEmbedding = embeddings.take("class_embedding", hidden).reshape(1, 1, hidden);
    Tensor positionEmbedding =
        embeddings.take("position_embedding.weight", config.numPositions(), hidden);
    Tensor preNormWeight = weights.take("pre_layrnorm.weight", hidden);
    Tensor preNormBias = weights.take("pre_layrnorm.bias", hidden);
    Weights encoder = weights.scope("encoder.layers");
    int used = config.numHiddenLayers() - 1;
    List<ClipEncoderLayer> layers = new ArrayList<>(used);
    for (int i = 0; i < used; i++) {
      layers.add(ClipEncoderLayer.load(config, encoder.scope(String.valueOf(i))));
    }
    ClipEncoderLayer.skip(config, encoder.scope(String.valueOf(used)));
    weights.skip("post_layernorm.weight", hidden);
    weights.skip("post_layernorm.bias", hidden);
    weights.finish();
    return new ClipVisionEncoder(
        config,
        weights.backend(),
        patchWeight,
        classEmbedding,
        positionEmbedding,
        preNormWeight,
        preNormBias,
        layers);
  }

  public ClipVisionConfig config() {
    return config;
  }

  /** Where the weights live and the encoder computes. */
  public Backend backend() {
    return backend;
  }

  /**
   * The image embeddings Wan's image-to-video transformer attends to: {@code hidden_states[-2]}.
   * Each image's result depends on that image alone.
   *
   * @param pixelValues {@code [B, num_channels, image_size, image_size]}, as {@link
   *     ClipImageProcessor} makes them
   * @return {@code [B, 1 + patches, hidden_size]} in F32
   */
  public Tensor penultimateHiddenState(Tensor pixelValues) {
    int[] shape = pixelValues.shape();
    int channels = config.numChannels();
    int side = config.imageSize();
    if (shape.length != 4
        || shape[0] < 1
        || shape[1] != channels
        || shape[2] != side
        || shape[3] != side) {
      throw new IllegalArgumentException(
          "pixel values must be [batch, "
              + channels
              + ", "
              + side
              + ", "
              + side
              + "], got "
              + Arrays.toString(shape));
    }
    return backend.scoped(() -> run(pixelValues));
  }

  private Tensor run(Tensor pixelValues) {
    int batch = pixelValues.dim(0);
    int hidden = config.hiddenSize();
    int side = config.patchesPerSide();
    int patch = config.patchSize();
    Tensor pixels = backend.upload(pixelValues, DType.F32).unsqueeze(2);
    Tensor patches =
        backend.conv3d(pixels, patchWeight, null, new int[] {1, patch, patch}, new int[3]);
    Tensor tokens = patches.reshape(batch, hidden, side * side).transpose(1, 2);
    Tensor classTokens = classEmbedding.expand(batch, 1, hidden);
    Tensor embedded =
        backend.add(backend.concat(List.of(classTokens, tokens), 1), positionEmbedding);
    Tensor h = backend.layerNorm(embedded, preNormWeight, preNormBias, config.layerNormEps());
    DType activations = backend.activationDType();
    if (h.dtype() != activations) {
      h = backend.upload(h, activations);
    }
    h = backend.chain(h, 0, layers.size(), (i, x) -> layers.get(i).forward(x));
    return h.dtype() == DType.F32 ? h : backend.upload(h, DType.F32);
  }
}

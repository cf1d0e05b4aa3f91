package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;
import java.util.ArrayList;
import java.util.List;

/**
 * The decoder stack ({@code z_dim} latent channels → video channels), in two parts: a global part
 * at latent resolution ({@code conv_in} and the mid block, whose attention spans the whole frame)
 * and a local part (the up blocks, {@code norm_out}, SiLU, {@code conv_out}) where every output
 * pixel depends only on a bounded neighbourhood of the global part's output, so it can run tile by
 * tile.
 */
final class WanVaeDecoder {
  /** The stages of the global part: the mid block. */
  private static final int GLOBAL_STAGES = 1;

  /** Extra latent cells of halo beyond the derived reach, in case a layer is ever miscounted. */
  private static final int HALO_MARGIN = 1;

  private final CausalStack stack;

  private WanVaeDecoder(CausalStack stack) {
    this.stack = stack;
  }

  static WanVaeDecoder load(WanVaeConfig config, Weights weights, ConvolutionPrecision precision) {
    int stages = config.dimMult().size();
    int[] dims = config.decoderWidths();
    List<Boolean> temporal = config.temporalUpsample();
    return new WanVaeDecoder(
        CausalStack.load(
            weights,
            config.zDim(),
            dims[0],
            slots -> {
              List<CausalLayer> layers = new ArrayList<>();
              layers.add(MidBlock.load(weights.scope("mid_block"), dims[0], slots, precision));
              for (int i = 0; i < stages; i++) {
                Weights block = weights.scope("up_blocks." + i);
                boolean upsample = i < stages - 1;
                if (config.isResidual() && upsample) {
                  layers.add(
                      ResidualUpBlock.load(
                          block,
                          dims[i],
                          dims[i + 1],
                          config.numResBlocks(),
                          temporal.get(i),
                          slots,
                          precision));
                  continue;
                }
                // A Wan 2.1 upsampler halves the width, so its next stage starts from half.
                int in = i == 0 || config.isResidual() ? dims[i] : dims[i] / 2;
                for (int r = 0; r <= config.numResBlocks(); r++) {
                  layers.add(
                      ResidualBlock.load(
                          block.scope("resnets." + r), in, dims[i + 1], slots, precision));
                  in = dims[i + 1];
                }
                if (upsample) {
                  layers.add(
                      Upsample.load(
                          block.scope("upsamplers.0"),
                          dims[i + 1],
                          dims[i + 1] / 2,
                          temporal.get(i),
                          slots,
                          precision));
                }
              }
              return layers;
            },
            dims[stages],
            config.outChannels(),
            precision));
  }

  int cacheSlots() {
    return stack.cacheSlots();
  }

  /** The global part for one latent frame over the whole frame: features at latent resolution. */
  Tensor global(Tensor latentFrame, CausalCache cache) {
    return stack.applyFront(latentFrame, cache, GLOBAL_STAGES);
  }

  /** The local part for (a region of) one frame's {@link #global} features: video pixels. */
  Tensor local(Tensor features, CausalCache cache) {
    return stack.applyBack(features, cache, GLOBAL_STAGES);
  }

  /**
   * How many latent cells of context a tile of the local part needs on each side so that its
   * interior equals the untiled decode.
   *
   * <p>Walk back from an output pixel and count how far its inputs reach, in cells of the
   * resolution at hand. Only 3×3 spatial kernels widen the reach, by one cell each: {@code
   * conv_out}, two per residual block ({@code num_res_blocks + 1} blocks per up stage) and one per
   * upsampler (applied after its ×2 nearest-neighbour doubling, so at the doubled resolution).
   * Passing back through a ×2 nearest doubling turns a reach of R cells into ⌈R/2⌉ cells (pixel
   * {@code p ± R} reads cell {@code ⌊(p ± R)/2⌋}). Norms act per position and shortcuts and
   * temporal convolutions are 1×1 in space; so are the residual decoder's stage shortcuts, which
   * repeat each cell into its own upsampled block. Time does not compound the reach: a layer reads
   * the previous layer's remembered frames at the same ±1 cells as its current ones, so every path
   * from the global features to a pixel crosses each spatial kernel once. Cells the halo clips at
   * the frame border are zero padding in the untiled decode too.
   */
  static int haloCells(WanVaeConfig config) {
    int convsPerStage = 2 * (config.numResBlocks() + 1);
    int stages = config.dimMult().size();
    int reach = 1; // conv_out
    for (int stage = stages - 1; stage >= 0; stage--) {
      if (stage < stages - 1) {
        reach += 1; // the upsampler's 3×3 convolution, at the doubled resolution
        reach = (reach + 1) / 2; // back through the ×2 doubling
      }
      reach += convsPerStage;
    }
    return reach + HALO_MARGIN;
  }
}

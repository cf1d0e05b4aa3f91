package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.io.Weights;
import java.util.ArrayList;
import java.util.List;

/**
 * Builds the encoder stack: video channels → {@code 2·z_dim} (mean and log-variance). Wan 2.1
 * numbers its residual blocks and downsamplers in one flat list; the residual (Wan 2.2) encoder
 * groups each stage into a {@link ResidualDownBlock}.
 */
final class WanVaeEncoder {
  private WanVaeEncoder() {}

  static CausalStack load(WanVaeConfig config, Weights weights, ConvolutionPrecision precision) {
    int[] dims = config.encoderWidths();
    int stages = config.dimMult().size();
    int deepest = dims[stages];
    return CausalStack.load(
        weights,
        config.inChannels(),
        dims[0],
        slots -> {
          List<CausalLayer> layers = new ArrayList<>();
          int block = 0;
          for (int i = 0; i < stages; i++) {
            boolean downsample = config.downsamples(i);
            boolean temporal = downsample && config.temperalDownsample().get(i);
            if (config.isResidual()) {
              layers.add(
                  ResidualDownBlock.load(
                      weights.scope("down_blocks." + i),
                      dims[i],
                      dims[i + 1],
                      config.numResBlocks(),
                      downsample,
                      temporal,
                      slots,
                      precision));
              continue;
            }
            int in = dims[i];
            for (int r = 0; r < config.numResBlocks(); r++) {
              Weights scope = weights.scope("down_blocks." + block++);
              layers.add(ResidualBlock.load(scope, in, dims[i + 1], slots, precision));
              in = dims[i + 1];
            }
            if (downsample) {
              Weights scope = weights.scope("down_blocks." + block++);
              layers.add(Downsample.load(scope, dims[i + 1], temporal, slots, precision));
            }
          }
          layers.add(MidBlock.load(weights.scope("mid_block"), deepest, slots, precision));
          return layers;
        },
        deepest,
        2 * config.zDim(),
        precision);
  }
}

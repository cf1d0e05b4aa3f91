package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.io.Weights;
import java.util.ArrayList;
import java.util.List;

/** Builds the encoder stack: video channels → {@code 2·z_dim} (mean and log-variance). */
final class WanVaeEncoder {
  private WanVaeEncoder() {}

  static CausalStack load(WanVaeConfig config, Weights weights) {
    List<Integer> mult = config.dimMult();
    int[] dims = new int[mult.size() + 1];
    dims[0] = config.baseDim();
    for (int i = 0; i < mult.size(); i++) {
      dims[i + 1] = config.baseDim() * mult.get(i);
    }
    int deepest = dims[dims.length - 1];
    return CausalStack.load(
        weights,
        config.inChannels(),
        dims[0],
        slots -> {
          List<CausalLayer> stages = new ArrayList<>();
          int block = 0;
          for (int i = 0; i < mult.size(); i++) {
            int in = dims[i];
            for (int r = 0; r < config.numResBlocks(); r++) {
              Weights scope = weights.scope("down_blocks." + block++);
              stages.add(ResidualBlock.load(scope, in, dims[i + 1], slots));
              in = dims[i + 1];
            }
            if (i < mult.size() - 1) {
              Weights scope = weights.scope("down_blocks." + block++);
              boolean temporal = config.temperalDownsample().get(i);
              stages.add(Downsample.load(scope, dims[i + 1], temporal, slots));
            }
          }
          stages.add(MidBlock.load(weights.scope("mid_block"), deepest, slots));
          return stages;
        },
        deepest,
        2 * config.zDim());
  }
}

package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.io.Weights;
import java.util.ArrayList;
import java.util.List;

/** Builds the decoder stack: {@code z_dim} latent channels → video channels. */
final class WanVaeDecoder {
  private WanVaeDecoder() {}

  static CausalStack load(WanVaeConfig config, Weights weights) {
    List<Integer> mult = config.dimMult();
    int base = config.decoderDim();
    int[] dims = new int[mult.size() + 1];
    dims[0] = base * mult.getLast();
    for (int i = 0; i < mult.size(); i++) {
      dims[i + 1] = base * mult.get(mult.size() - 1 - i);
    }
    List<Boolean> temporal = config.temporalUpsample();
    return CausalStack.load(
        weights,
        config.zDim(),
        dims[0],
        slots -> {
          List<CausalLayer> stages = new ArrayList<>();
          stages.add(MidBlock.load(weights.scope("mid_block"), dims[0], slots));
          for (int i = 0; i < mult.size(); i++) {
            Weights block = weights.scope("up_blocks." + i);
            // Every upsampler halves the width, so later stages start from half the width before.
            int in = i == 0 ? dims[0] : dims[i] / 2;
            for (int r = 0; r <= config.numResBlocks(); r++) {
              stages.add(ResidualBlock.load(block.scope("resnets." + r), in, dims[i + 1], slots));
              in = dims[i + 1];
            }
            if (i < mult.size() - 1) {
              stages.add(
                  Upsample.load(block.scope("upsamplers.0"), dims[i + 1], temporal.get(i), slots));
            }
          }
          return stages;
        },
        dims[mult.size()],
        config.outChannels());
  }
}

package dev.stepweave.cli;

import dev.stepweave.core.parity.TapSink;
import dev.stepweave.core.request.Request;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.models.wan.transformer.WanTransformer;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.RandomWeights;
import java.util.Arrays;
import java.util.Optional;

/**
 * The transformer forwards of one denoising step issued by hand, outside the engine, on the
 * product's own model and in its process: what a step would cost with nothing but the forwards (two
 * batch-1 forwards for a guided request, as the denoise loop runs them by default; one otherwise).
 * {@code bench generate} prints it beside the product's measured step, so the product path's own
 * share of a step is measured in one process, on one GPU clock.
 */
final class BareStep {
  private static final int TIMED = 3;

  private BareStep() {}

  /**
   * The median milliseconds of {@value #TIMED} bare steps after a warm-up, for a text-to-video
   * transformer; empty for one with image tokens or image-condition channels among its inputs (its
   * step's inputs are more than latents, a timestep and text).
   */
  static Optional<Double> millis(WanModel wan, Request request) {
    WanTransformerConfig cfg = wan.transformerConfig();
    if (cfg.image() != null || wan.vaeConfig().zDim() != cfg.inChannels()) {
      return Optional.empty();
    }
    Backend ops = wan.backend();
    var p = request.params();
    var vae = wan.vaeConfig();
    int frames = (p.frames() - 1) / vae.temporalCompression() + 1;
    int s = vae.spatialCompression();
    Tensor latents =
        ops.upload(
            RandomWeights.uniform(
                1, 1f, 1, cfg.inChannels(), frames, p.height() / s, p.width() / s),
            DType.F32);
    Tensor timestep = ops.upload(Tensor.full(500f, 1), DType.F32);
    Tensor text =
        ops.upload(
            RandomWeights.uniform(2, 1f, 1, wan.maxSequenceLength(request), cfg.textDim()),
            DType.F32);
    WanTransformer dit = wan.transformer();
    int forwards = p.guidance() > 1 ? 2 : 1;
    double[] ms = new double[TIMED];
    for (int i = -1; i < TIMED; i++) {
      long t0 = System.nanoTime();
      for (int f = 0; f < forwards; f++) {
        ops.scoped(() -> dit.forward(latents, timestep, text, TapSink.NONE));
      }
      ops.synchronize();
      if (i >= 0) {
        ms[i] = (System.nanoTime() - t0) / 1e6;
      }
    }
    Arrays.sort(ms);
    return Optional.of(ms[TIMED / 2]);
  }
}

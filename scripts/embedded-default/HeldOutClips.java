// What the embedded default's probes share (CaptionProbe, FrameOrderProbe, SdEditProbe): a model on
// two CPU threads, the held-out shapes clips (seed 99, 64x64x9) encoded as training encodes them,
// and the DiT's conditional velocity and flow-matching loss on one of them. Not run on its own: the
// source launcher compiles it beside the probe it is launched with. -Dobjects=SMALLEST,LARGEST[,TRAVEL]
// draws the clips' objects as a model's training data did (data.object_size and data.min_travel;
// e.g. 20,36 for v5).
import dev.stepweave.core.parity.TapSink;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.training.data.DatasetEncoder;
import dev.stepweave.training.data.LatentSample;
import dev.stepweave.training.shapes.ShapeSample;
import dev.stepweave.training.shapes.ShapesDataset;
import java.nio.file.Path;
import java.util.Random;

final class HeldOutClips implements AutoCloseable {
  final CpuBackend cpu = new CpuBackend(2);
  final WanModel model;
  final DatasetEncoder encoder;
  private final ShapesDataset clips = heldOut(System.getProperty("objects"));

  private static ShapesDataset heldOut(String objects) {
    if (objects == null) {
      return new ShapesDataset(99, 64, 64, 9);
    }
    String[] sizes = objects.split(",");
    int travel = sizes.length > 2 ? Integer.parseInt(sizes[2].trim()) : 0;
    return new ShapesDataset(
        99, 64, 64, 9, Integer.parseInt(sizes[0].trim()), Integer.parseInt(sizes[1].trim()), travel);
  }

  HeldOutClips(String modelDir) {
    model = WanModel.load(Path.of(modelDir), cpu);
    encoder = new DatasetEncoder(model);
  }

  /** Held-out clip i and its latents [C, T, H, W] and prompt embedding, encoded. */
  record Clip(ShapeSample sample, LatentSample encoded) {
    float[] x0() {
      return encoded.latents().toFloatArray();
    }

    int[] shape() {
      return encoded.latents().shape();
    }

    Tensor context() {
      return encoded.promptEmbeds().unsqueeze(0);
    }
  }

  Clip clip(int i) {
    ShapeSample s = clips.sample(i);
    return new Clip(s, encoder.encode(s.id(), s.motion().caption().text(), s.clip()));
  }

  /** The conditional velocity at x (latents of {@code shape}, flattened) and noise level sigma. */
  float[] velocity(float[] x, int[] shape, float sigma, Tensor context) {
    Tensor input = Tensor.of(x, 1, shape[0], shape[1], shape[2], shape[3]);
    Tensor timestep = Tensor.of(new float[] {1000 * sigma}, 1);
    return cpu.download(model.transformer().forward(input, timestep, context, TapSink.NONE))
        .toFloatArray();
  }

  /** The flow-matching loss of x0 noised to sigma with {@code noise}: mean (v − (noise − x0))². */
  double loss(float[] x0, float[] noise, int[] shape, float sigma, Tensor context) {
    float[] xt = new float[x0.length];
    for (int k = 0; k < x0.length; k++) {
      xt[k] = (1 - sigma) * x0[k] + sigma * noise[k];
    }
    float[] v = velocity(xt, shape, sigma, context);
    double squares = 0;
    for (int k = 0; k < v.length; k++) {
      double e = v[k] - (noise[k] - x0[k]);
      squares += e * e;
    }
    return squares / v.length;
  }

  /** n standard normal draws of {@code draws}, as floats. */
  static float[] gaussians(Random draws, int n) {
    float[] out = new float[n];
    for (int k = 0; k < n; k++) {
      out[k] = (float) draws.nextGaussian();
    }
    return out;
  }

  @Override
  public void close() {
    model.close();
  }
}

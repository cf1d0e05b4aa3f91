// Whether a DiT has learnt time (docs/training.md, "The embedded default"): its flow-matching loss
// on held-out shapes clips (seed 99, 64x64x9, encoded as training encodes them) with the frames in
// order, shuffled (a fixed derangement) and frozen (frame 0 nine times), at a few noise levels, the
// same noise for all three. A model that uses the frames' order scores the clips in order clearly
// best; one that treats frames alike scores order and shuffle the same.
//   java --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED \
//       -cp cli/target/stepweave.jar scripts/embedded-default/FrameOrderProbe.java MODEL_DIR CLIPS
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

public class FrameOrderProbe {
  private static final int[] DERANGEMENT = {4, 7, 1, 8, 0, 3, 6, 2, 5};
  private static final double[] SIGMAS = {0.2, 0.4, 0.6, 0.8};

  public static void main(String[] a) {
    CpuBackend cpu = new CpuBackend(2);
    int n = Integer.parseInt(a[1]);
    double[][] loss = new double[SIGMAS.length][3];
    try (WanModel model = WanModel.load(Path.of(a[0]), cpu)) {
      DatasetEncoder encoder = new DatasetEncoder(model);
      ShapesDataset clips = new ShapesDataset(99, 64, 64, 9);
      Random noiseDraws = new Random(1);
      for (int i = 0; i < n; i++) {
        ShapeSample s = clips.sample(i);
        LatentSample sample = encoder.encode(s.id(), s.motion().caption().text(), s.clip());
        int[] shape = sample.latents().shape(); // [C, T, H, W]
        float[] inOrder = sample.latents().toFloatArray();
        float[][] variants = {inOrder, frames(inOrder, shape, DERANGEMENT), frames(inOrder, shape, new int[9])};
        float[] noise = new float[inOrder.length];
        for (int k = 0; k < noise.length; k++) {
          noise[k] = (float) noiseDraws.nextGaussian();
        }
        Tensor context = sample.promptEmbeds().unsqueeze(0);
        for (int si = 0; si < SIGMAS.length; si++) {
          float sigma = (float) SIGMAS[si];
          for (int v = 0; v < variants.length; v++) {
            float[] x0 = variants[v];
            float[] xt = new float[x0.length];
            for (int k = 0; k < x0.length; k++) {
              xt[k] = (1 - sigma) * x0[k] + sigma * noise[k];
            }
            Tensor input = Tensor.of(xt, 1, shape[0], shape[1], shape[2], shape[3]);
            float[] velocity =
                cpu.download(
                        model
                            .transformer()
                            .forward(input, Tensor.of(new float[] {1000 * sigma}, 1), context, TapSink.NONE))
                    .toFloatArray();
            double squares = 0;
            for (int k = 0; k < velocity.length; k++) {
              double e = velocity[k] - (noise[k] - x0[k]);
              squares += e * e;
            }
            loss[si][v] += squares / velocity.length / n;
          }
        }
      }
    }
    for (int si = 0; si < SIGMAS.length; si++) {
      System.out.printf(
          "sigma %.1f: in order %.4f, shuffled %.4f, frozen %.4f%n",
          SIGMAS[si], loss[si][0], loss[si][1], loss[si][2]);
    }
    System.exit(0);
  }

  /** {@code x [C, T, H, W]} with frame t taken from frame {@code from[t]}. */
  private static float[] frames(float[] x, int[] shape, int[] from) {
    int c = shape[0], t = shape[1], plane = shape[2] * shape[3];
    float[] out = new float[x.length];
    for (int ch = 0; ch < c; ch++) {
      for (int f = 0; f < t; f++) {
        System.arraycopy(x, (ch * t + from[f]) * plane, out, (ch * t + f) * plane, plane);
      }
    }
    return out;
  }
}

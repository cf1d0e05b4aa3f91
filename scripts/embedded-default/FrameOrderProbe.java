// Whether a DiT has learnt time (docs/training.md, "The embedded default"): its flow-matching loss
// on held-out shapes clips (seed 99, 64x64x9, encoded as training encodes them) with the frames in
// order, shuffled (a fixed derangement) and frozen (frame 0 nine times), at a few noise levels, the
// same noise for all three. A model that uses the frames' order scores the clips in order clearly
// best; one that treats frames alike scores order and shuffle the same.
//   java --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED \
//       -cp cli/target/stepweave.jar scripts/embedded-default/FrameOrderProbe.java MODEL_DIR CLIPS
import dev.stepweave.tensor.Tensor;
import java.util.Random;

public class FrameOrderProbe {
  private static final int[] DERANGEMENT = {4, 7, 1, 8, 0, 3, 6, 2, 5};
  private static final double[] SIGMAS = {0.2, 0.4, 0.6, 0.8};

  public static void main(String[] a) {
    int n = Integer.parseInt(a[1]);
    double[][] loss = new double[SIGMAS.length][3];
    try (HeldOutClips held = new HeldOutClips(a[0])) {
      Random noiseDraws = new Random(1);
      for (int i = 0; i < n; i++) {
        HeldOutClips.Clip clip = held.clip(i);
        int[] shape = clip.shape(); // [C, T, H, W]
        float[] inOrder = clip.x0();
        float[][] variants = {inOrder, frames(inOrder, shape, DERANGEMENT), frames(inOrder, shape, new int[9])};
        float[] noise = HeldOutClips.gaussians(noiseDraws, inOrder.length);
        Tensor context = clip.context();
        for (int si = 0; si < SIGMAS.length; si++) {
          for (int v = 0; v < variants.length; v++) {
            loss[si][v] += held.loss(variants[v], noise, shape, (float) SIGMAS[si], context) / n;
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

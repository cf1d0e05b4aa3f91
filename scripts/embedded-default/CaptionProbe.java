// Which caption words a DiT uses (docs/training.md, "The embedded default"): its flow-matching loss
// on held-out shapes clips (seed 99, 64x64x9, encoded as training encodes them) with the right
// caption and with one word changed — the opposite direction, the other shape, another colour,
// another background — at a few noise levels, the same noise for all. A word the model has learnt
// to draw costs loss when it is wrong; one it ignores costs nothing.
//   java --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED \
//       -cp cli/target/stepweave.jar scripts/embedded-default/CaptionProbe.java MODEL_DIR CLIPS
import dev.stepweave.tensor.Tensor;
import java.util.Map;
import java.util.Random;

public class CaptionProbe {
  private static final double[] SIGMAS = {0.5, 0.8, 0.9, 0.97};
  private static final String[] NAMES = {"right", "direction", "shape", "colour", "background"};

  public static void main(String[] a) {
    int n = Integer.parseInt(a[1]);
    double[][] loss = new double[SIGMAS.length][NAMES.length];
    Map<String, String> opposite = Map.of("left", "right", "right", "left", "up", "down", "down", "up");
    try (HeldOutClips held = new HeldOutClips(a[0])) {
      Random noiseDraws = new Random(1);
      for (int i = 0; i < n; i++) {
        HeldOutClips.Clip clip = held.clip(i);
        String text = clip.sample().motion().caption().text();
        String[] w = text.split(" ");
        // a {color} {shape} moving {direction} on a {background} background
        String[] variants = new String[NAMES.length];
        variants[0] = text;
        String[] d = w.clone(); d[4] = opposite.get(w[4]); variants[1] = String.join(" ", d);
        String[] sh = w.clone(); sh[2] = w[2].equals("ball") ? "square" : "ball"; variants[2] = String.join(" ", sh);
        String[] c = w.clone(); c[1] = w[1].equals("red") ? "blue" : "red"; variants[3] = String.join(" ", c);
        String[] b = w.clone(); b[7] = w[7].equals("black") ? "gray" : "black"; variants[4] = String.join(" ", b);
        float[] x0 = clip.x0();
        float[] noise = HeldOutClips.gaussians(noiseDraws, x0.length);
        Tensor[] contexts = new Tensor[NAMES.length];
        for (int v = 0; v < NAMES.length; v++) {
          var s = clip.sample();
          contexts[v] = held.encoder.encode(s.id(), variants[v], s.clip()).promptEmbeds().unsqueeze(0);
        }
        if (i == 0) for (String v : variants) System.out.println("  " + v);
        for (int si = 0; si < SIGMAS.length; si++) {
          for (int v = 0; v < NAMES.length; v++) {
            loss[si][v] += held.loss(x0, noise, clip.shape(), (float) SIGMAS[si], contexts[v]) / n;
          }
        }
      }
    }
    for (int si = 0; si < SIGMAS.length; si++) {
      StringBuilder line = new StringBuilder(String.format("sigma %.2f:", SIGMAS[si]));
      for (int v = 0; v < NAMES.length; v++) line.append(String.format(" %s %.4f", NAMES[v], loss[si][v]));
      System.out.println(line);
    }
    System.exit(0);
  }
}

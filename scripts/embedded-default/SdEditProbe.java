// A diagnostic for the embedded default (docs/training.md, "The embedded default"): held-out shapes
// clips (seed 99, 64x64x9, encoded as training encodes them) noised to each SIGMA0, then Euler steps
// on the scheduler's shifted spacing (shift 3) down to 0 with the conditional velocity only (no CFG),
// decoded and judged: how much of a real clip the DiT needs to finish it as one object moving.
//   java --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED \
//       -cp cli/target/stepweave.jar scripts/embedded-default/SdEditProbe.java MODEL_DIR CLIPS STEPS SIGMA0...
import dev.stepweave.models.wan.vae.WanVae;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.training.data.RgbClip;
import dev.stepweave.training.shapes.*;
import java.util.Random;

/** args: modelDir n steps sigma0...: held-out clips (seed 99) noised to sigma0, Euler (no CFG) to 0, decoded, judged. */
public class SdEditProbe {
  public static void main(String[] a) {
    int n = Integer.parseInt(a[1]);
    int steps = Integer.parseInt(a[2]);
    ShapesJudge judge = new ShapesJudge();
    try (HeldOutClips held = new HeldOutClips(a[0])) {
      WanVae vae = held.model.vae();
      for (int ai = 3; ai < a.length; ai++) {
        float sigma0 = Float.parseFloat(a[ai]);
        Random noiseDraws = new Random(1);
        int[] right = new int[4];
        for (int i = 0; i < n; i++) {
          HeldOutClips.Clip clip = held.clip(i);
          ShapeSample s = clip.sample();
          int[] shape = clip.shape();
          float[] x0 = clip.x0();
          float[] x = new float[x0.length];
          for (int k = 0; k < x.length; k++) x[k] = (1 - sigma0) * x0[k] + sigma0 * (float) noiseDraws.nextGaussian();
          Tensor context = clip.context();
          for (int st = 0; st < steps; st++) {
            // shifted schedule (3) from sigma0 to 0, as the serving scheduler's spacing
            float u0 = 1f - (float) st / steps, u1 = 1f - (float) (st + 1) / steps;
            float s0 = sigma0 * shift(u0), s1 = sigma0 * shift(u1);
            float[] v = held.velocity(x, shape, s0, context);
            for (int k = 0; k < x.length; k++) x[k] += (s1 - s0) * v[k];
          }
          Tensor z = vae.denormalize(Tensor.of(x, 1, shape[0], shape[1], shape[2], shape[3]));
          float[] y = vae.decode(z).toHost(DType.F32).toFloatArray();
          int F = 9, P = 64 * 64;
          byte[] rgb = new byte[F * P * 3];
          for (int f = 0; f < F; f++) for (int p = 0; p < P; p++) for (int c = 0; c < 3; c++)
            rgb[(f * P + p) * 3 + c] = (byte) Math.round(Math.clamp((y[(c * F + f) * P + p] + 1f) / 2f, 0f, 1f) * 255f);
          Verdict vd = judge.judge(new RgbClip(F, 64, 64, rgb), s.caption());
          right[0] += vd.backgroundRight() ? 1 : 0; right[1] += vd.colorRight() ? 1 : 0;
          right[2] += vd.shapeRight() ? 1 : 0; right[3] += vd.directionRight() ? 1 : 0;
        }
        System.out.printf("sigma0 %.2f: judge %.3f (bg %d col %d shape %d dir %d of %d)%n", sigma0, (right[0]+right[1]+right[2]+right[3])/(4.0*n), right[0], right[1], right[2], right[3], n);
      }
    }
    System.exit(0);
  }
  static float shift(float u) { return 3 * u / (1 + 2 * u); }
}

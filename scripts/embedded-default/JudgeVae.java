// The judge on a VAE's reconstructions of held-out shapes clips (docs/training.md, "The embedded
// default"): encodes and decodes clips 0..N-1 of a seed at 64x64 and prints the share of attributes
// right, per attribute, and the mean absolute error in [-1, 1]. DUMP=prefix writes the first 8
// clips and reconstructions as raw RGB (prefix_i.rgb) for a look.
//   java --add-modules jdk.incubator.vector -cp cli/target/stepweave.jar \
//       scripts/embedded-default/JudgeVae.java MODEL_DIR CLIPS SEED FRAMES [verbose]
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.models.wan.vae.WanVae;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.training.data.RgbClip;
import dev.stepweave.training.shapes.*;
import java.nio.file.Path;

/** args: modelDir clips seed frames */
public class JudgeVae {
  public static void main(String[] a) {
    Path dir = Path.of(a[0]);
    int n = Integer.parseInt(a[1]);
    long seed = Long.parseLong(a[2]);
    int frames = Integer.parseInt(a[3]);
    ShapesDataset ds = new ShapesDataset(seed, 64, 64, frames);
    ShapesJudge judge = new ShapesJudge();
    int[] right = new int[4];
    double err = 0;
    try (WanModel m = WanModel.load(dir, new CpuBackend(2))) {
      WanVae vae = m.vae();
      for (int i = 0; i < n; i++) {
        ShapeSample s = ds.sample(i);
        Tensor x = s.clip().toVaeInput();
        Tensor y = vae.decode(vae.encode(x).mean()).toHost(dev.stepweave.tensor.DType.F32);
        float[] v = y.toFloatArray();
        float[] xv = x.toFloatArray();
        int F = frames, H = 64, W = 64, P = H * W;
        byte[] rgb = new byte[F * P * 3];
        for (int f = 0; f < F; f++)
          for (int p = 0; p < P; p++)
            for (int c = 0; c < 3; c++) {
              float u = (v[(c * F + f) * P + p] + 1f) / 2f;
              err += Math.abs(v[(c * F + f) * P + p] - xv[(c * F + f) * P + p]);
              rgb[(f * P + p) * 3 + c] = (byte) Math.round(Math.clamp(u, 0f, 1f) * 255f);
            }
        if (System.getenv("DUMP") != null && i < 8) {
          try (var o = new java.io.FileOutputStream(System.getenv("DUMP") + "_" + i + ".rgb")) {
            o.write(s.clip().bytes()); o.write(rgb);
          } catch (java.io.IOException e) { throw new RuntimeException(e); }
        }
        Verdict vd = judge.judge(new RgbClip(F, H, W, rgb), s.caption());
        right[0] += vd.backgroundRight() ? 1 : 0;
        right[1] += vd.colorRight() ? 1 : 0;
        right[2] += vd.shapeRight() ? 1 : 0;
        right[3] += vd.directionRight() ? 1 : 0;
        if (a.length > 4) System.out.println(s.caption().text() + " -> " + vd.seen());
      }
      double tot = (right[0] + right[1] + right[2] + right[3]) / (4.0 * n);
      System.out.printf("judge %.3f (bg %d col %d shape %d dir %d of %d) meanL1 %.4f%n", tot, right[0], right[1], right[2], right[3], n, err / (n * frames * 64 * 64 * 3.0));
    }
  }
}

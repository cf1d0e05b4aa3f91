// The judge on generations (docs/training.md, "The embedded default"): N random shapes captions
// (java.util.Random seeded 5000) with seeds 5000.., 64x64x9, through the serving engine as
// EmbeddedDefaultJudgeTest does, never the test's prompts or seeds.
//   java --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED \
//       -cp cli/target/stepweave.jar scripts/embedded-default/JudgeGen.java MODEL_DIR N STEPS GUIDANCE [SAMPLER|default] [verbose]
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.*;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.training.data.RgbClip;
import dev.stepweave.training.shapes.*;
import java.nio.file.Path;
import java.util.*;
import java.util.concurrent.TimeUnit;

/** args: modelDir n steps guidance [sampler|default] [verbose]: random captions (SplitMix from 5000), seeds 5000+i. */
public class JudgeGen {
  public static void main(String[] a) throws Exception {
    Path dir = Path.of(a[0]);
    int n = Integer.parseInt(a[1]);
    int steps = Integer.parseInt(a[2]);
    double guidance = Double.parseDouble(a[3]);
    Optional<String> sampler = a.length > 4 && !a[4].equals("default") ? Optional.of(a[4]) : Optional.empty();
    List<ShapeCaption> all = new ArrayList<>(ShapeCaption.all());
    Random r = new Random(5000);
    ShapesJudge judge = new ShapesJudge();
    int[] right = new int[4];
    try (WanModel model = WanModel.load(dir, new CpuBackend(2)); Engine engine = new Engine(model)) {
      for (int i = 0; i < n; i++) {
        ShapeCaption wanted = all.get(r.nextInt(all.size()));
        var p = new DiffusionParams(steps, guidance, 5000 + i, 64, 64, 9, 8, "", sampler, Optional.empty());
        Artifact.VideoArtifact video = engine.submit(Request.text(TaskType.T2V, wanted.text(), p)).result().get(300, TimeUnit.SECONDS).artifact(Artifact.VideoArtifact.class);
        RgbClip clip = RgbClip.fromFrames(video.frames());
        Verdict v = judge.judge(clip, wanted);
        right[0] += v.backgroundRight() ? 1 : 0; right[1] += v.colorRight() ? 1 : 0;
        right[2] += v.shapeRight() ? 1 : 0; right[3] += v.directionRight() ? 1 : 0;
        if (a.length > 5) System.out.println(wanted.text() + " -> " + v.seen());
      }
    }
    System.out.printf("gen judge %.3f (bg %d col %d shape %d dir %d of %d) steps %d cfg %.1f sampler %s%n", (right[0]+right[1]+right[2]+right[3])/(4.0*n), right[0], right[1], right[2], right[3], n, steps, guidance, sampler.orElse("default"));
    System.exit(0);
  }
}

// DiffusionNFT on one prompt, with a control (docs/post-training.md, "One prompt, and its
// control"): the embedded default as a CFG-free policy (8 UniPC steps) trained by NftTrainer on
// groups of 8 samples of PROMPT, rewarded by the shapes judge's graded colour (or, with `reverse`,
// by one minus it); every 5 iterations the colour on 16 seeds never rolled out (9000-9015).
//   java --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED \
//       -cp cli/target/stepweave.jar scripts/post-training/NftOnePrompt.java \
//       MODEL_DIR ITERATIONS LEARNING_RATE normal|reverse "PROMPT"
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.*;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.*;
import dev.stepweave.training.data.RgbClip;
import dev.stepweave.training.optim.*;
import dev.stepweave.training.rl.*;
import dev.stepweave.training.reward.ClipReward;
import dev.stepweave.training.shapes.*;
import dev.stepweave.training.wan.TrainableTransformer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.TimeUnit;

public class NftOnePrompt {
  static Request req(String id, String prompt, long seed) {
    return Request.builder(TaskType.T2V, new DiffusionParams(8, 1.0, seed, 64, 64, 9, 8, "", Optional.empty(), Optional.empty())).id(id).prompt(prompt).build();
  }
  public static void main(String[] a) throws Exception {
    Path dir = Path.of(a[0]);
    int iters = Integer.parseInt(a[1]);
    double lr = Double.parseDouble(a[2]);
    boolean reverse = a[3].equals("reverse");
    String prompt = a[4];
    ShapeCaption cap = ShapeCaption.parse(prompt);
    ShapesJudge judge = new ShapesJudge();
    ClipReward near = (clip, p) -> judge.colorNearness(clip, ShapeCaption.parse(p).color());
    ClipReward r = reverse ? (clip, p) -> 1 - near.reward(clip, p) : near;
    var component = DiffusersDirectory.open(dir).component("transformer");
    try (WanModel model = WanModel.load(dir, new CpuBackend(1)); Engine engine = new Engine(model); TensorSource w = component.openWeights()) {
      TrainableTransformer policy = TrainableTransformer.load(WanTransformerConfig.fromJson(component.config()), w, new CpuBackend(1));
      NftTrainer t = new NftTrainer(engine, policy, SampleReward.ofClips(r), new NftTrainer.Settings(8, 1.0, new Optimiser.Settings(new LearningRate.Constant(lr), AdamW.Settings.torchDefaults(), 1.0, Double.NaN), Duration.ofMinutes(10)), 7);
      for (int it = 0; it <= iters; it++) {
        if (it % 5 == 0) {
          double sum = 0; int right = 0;
          for (int i = 0; i < 16; i++) {
            var v = engine.submit(req("h" + it + "-" + i, prompt, 9000 + i)).result().get(300, TimeUnit.SECONDS).artifact(Artifact.VideoArtifact.class);
            RgbClip clip = RgbClip.fromFrames(v.frames());
            sum += near.reward(clip, prompt);
            right += judge.judge(clip, cap).colorRight() ? 1 : 0;
          }
          System.out.printf("iter %d heldout-seeds near %.4f colour right %d/16%n", it, sum / 16, right);
        }
        if (it == iters) break;
        var res = t.iterate(req("g" + it, prompt, 0), 100000L + it * 100L);
        System.out.printf("iter %d group reward %.3f loss %.5f%n", it, res.meanReward(), res.loss());
      }
    }
    System.exit(0);
  }
}

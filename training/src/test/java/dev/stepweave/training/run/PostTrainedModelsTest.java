package dev.stepweave.training.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.CardJson;
import dev.stepweave.core.card.ModelCard;
import dev.stepweave.core.card.RecipeRefusedException;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.InvalidRequestException;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.EngineConfig;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.models.wan.cache.StepCachePlugin;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.training.data.RgbClip;
import dev.stepweave.training.reward.ClipReward;
import dev.stepweave.training.shapes.ShapeCaption;
import dev.stepweave.training.shapes.ShapesJudge;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The post-trained embedded models committed under {@code trained/} (issue 17), made by the
 * committed configs from the embedded default of format v4 (kept beside them as {@code
 * trained/wan21-embedded-v4}: the default has since moved to v5, which they were not made from),
 * each judged on the 21 shapes captions its training never saw: the 4-step, CFG-free student of
 * {@code embedded-distill.yaml} must keep at least 95 % of its teacher's 50-step shapes-judge
 * score, and the CFG-free policy of {@code embedded-nft.yaml} must draw the asked colour nearer
 * than the base it started from does at the same settings, on seeds no run rolled out or measured.
 * Both load through the ordinary loader with cards whose recipes name that default's transformer as
 * their parent; the student refuses other settings and step-reusing caches.
 */
class PostTrainedModelsTest {
  private static final Path ROOT =
      Path.of(System.getProperty("stepweave.golden")).getParent().getParent();
  private static final Path TRAINED = ROOT.resolve("trained");
  private static final Path CONFIGS = ROOT.resolve("training/configs");

  /** Seeds no training run rolled out or measured on. */
  private static final long FRESH_SEEDS = 7000;

  /** The share of the teacher's score the student must keep (issue 17, item 6). */
  static final double STUDENT_SHARE = 0.95;

  /** The embedded default of format v4, which both were post-trained from. */
  private static final Path TEACHER = TRAINED.resolve("wan21-embedded-v4");

  private static TrainConfig distill;
  private static TrainConfig nft;

  @BeforeAll
  static void load() {
    distill = TrainConfigReader.read(CONFIGS.resolve("embedded-distill.yaml"));
    nft = TrainConfigReader.read(CONFIGS.resolve("embedded-nft.yaml"));
  }

  private static List<String> heldOut() {
    return nft.evaluation().prompts();
  }

  @Test
  void theConfigsTrainOnEveryCaptionButTheJudgedOnes() {
    List<String> trainedOn = ((TrainConfig.Data.Prompts) distill.data()).prompts();
    assertEquals(trainedOn, ((TrainConfig.Data.Prompts) nft.data()).prompts());
    Set<String> all = new HashSet<>(trainedOn);
    all.addAll(heldOut());
    assertEquals(trainedOn.size() + heldOut().size(), all.size(), "held out means disjoint");
    assertEquals(
        ShapeCaption.all().stream().map(ShapeCaption::text).collect(Collectors.toSet()), all);
  }

  @Test
  void theStudentKeepsTheTeachersScoreInFourUnguidedSteps() throws Exception {
    Path student = TRAINED.resolve("wan21-embedded-4step");
    ModelCard card = CardJson.read(student.resolve(CardJson.FILE_NAME));
    assertParent(card, "distill");
    assertEquals(4, card.recipe().assumesSteps());
    assertEquals("euler", card.recipe().assumesSampler());
    assertEquals(1.0, card.recipe().assumesGuidance());

    ShapesJudge judge = new ShapesJudge();
    double teacherScore =
        mean(
            TEACHER,
            1,
            (i, j) ->
                new DiffusionParams(
                    50, 3.0, FRESH_SEEDS + i, 64, 64, 9, 8, "", euler(), Optional.empty()),
            judge,
            "teacher, 50 euler steps, guidance 3");
    double studentScore =
        mean(
            student,
            1,
            (i, j) ->
                new DiffusionParams(
                    4, 1.0, FRESH_SEEDS + i, 64, 64, 9, 8, "", euler(), Optional.empty()),
            judge,
            "student, 4 euler steps, no guidance");
    System.out.printf(
        Locale.ROOT,
        "shapes judge on %d held-out captions: teacher %.3f, student %.3f (%.0f %%)%n",
        heldOut().size(),
        teacherScore,
        studentScore,
        100 * studentScore / teacherScore);
    assertTrue(
        studentScore >= STUDENT_SHARE * teacherScore,
        "student " + studentScore + " against the teacher's " + teacherScore);

    try (WanModel served = WanModel.load(student, new CpuBackend(2));
        Engine engine =
            new Engine(
                served,
                EngineConfig.defaults(),
                Extensions.builder().enable(StepCachePlugin.STEPCACHE).build())) {
      var refused =
          assertThrows(
              RecipeRefusedException.class,
              () ->
                  engine.submit(
                      Request.text(
                          TaskType.T2V,
                          heldOut().getFirst(),
                          new DiffusionParams(
                              50, 3.0, 1, 64, 64, 9, 8, "", euler(), Optional.empty()))));
      assertTrue(
          refused.getMessage().contains("steps 50 (recipe assumes 4), guidance 3.0"),
          refused.getMessage());
      var cached =
          assertThrows(
              InvalidRequestException.class,
              () ->
                  engine.submit(
                      Request.builder(
                              TaskType.T2V,
                              new DiffusionParams(
                                  4, 1.0, 1, 64, 64, 9, 8, "", euler(), Optional.empty()))
                          .prompt(heldOut().getFirst())
                          .plugins(Map.of(StepCachePlugin.STEPCACHE.id(), Map.of()))
                          .build()));
      assertTrue(cached.getMessage().contains("refuses plugin 'stepcache'"), cached.getMessage());
    }
  }

  @Test
  void theNftPolicyDrawsTheAskedColourNearerThanItsBase() throws Exception {
    Path policy = TRAINED.resolve("wan21-embedded-nft");
    ModelCard card = CardJson.read(policy.resolve(CardJson.FILE_NAME));
    assertParent(card, "nft");
    TrainConfig.Method.Nft method = (TrainConfig.Method.Nft) nft.method();
    assertEquals(method.samplingSteps(), card.defaults().steps());
    assertEquals(1.0, card.defaults().guidance());

    ShapesJudge judge = new ShapesJudge();
    TrainConfig.Evaluation evaluation = nft.evaluation();
    int n = evaluation.samplesPerPrompt();
    // The run's held-out measurement (NftComponent#heldOutReward) at its settings, but on seeds
    // the run never rolled out or measured: its step count was chosen from a run whose held-out
    // curve used the config's seeds.
    Settings rollouts =
        (i, j) ->
            new DiffusionParams(
                method.samplingSteps(),
                1.0,
                FRESH_SEEDS + (long) i * n + j,
                64,
                64,
                9,
                8,
                "",
                Optional.of(method.sampler()),
                Optional.empty());
    ClipReward nearness =
        (clip, prompt) -> judge.colorNearness(clip, ShapeCaption.parse(prompt).color());
    double base = mean(TEACHER, n, rollouts, nearness, "base, CFG-free");
    double trained = mean(policy, n, rollouts, nearness, "nft policy, CFG-free");
    System.out.printf(
        Locale.ROOT,
        "colour nearness on %d held-out captions, CFG-free: base %.4f, nft policy %.4f%n",
        heldOut().size(),
        base,
        trained);
    assertTrue(trained > base, "nft policy " + trained + ", base " + base);
  }

  /** The card's recipe is {@code method}'s, from the v4 embedded default's transformer. */
  private static void assertParent(ModelCard card, String method) throws Exception {
    ModelCard base = CardJson.read(TEACHER.resolve(CardJson.FILE_NAME));
    assertEquals(method, card.recipe().method());
    assertEquals(List.of(base.modelId()), card.recipe().parents());
    assertEquals(
        CheckpointCopy.weightsHash(TEACHER.resolve("transformer")), card.recipe().parentWeights());
  }

  /** The request settings of sample {@code sample} of held-out prompt {@code prompt}. */
  private interface Settings {
    DiffusionParams of(int prompt, int sample);
  }

  /**
   * The mean reward of {@code model}'s generations, {@code samples} for each held-out caption, with
   * {@code settings}.
   */
  private static double mean(
      Path model, int samples, Settings settings, ClipReward reward, String what) throws Exception {
    double sum = 0;
    List<String> prompts = heldOut();
    try (WanModel served = WanModel.load(model, new CpuBackend(2));
        Engine engine = new Engine(served)) {
      for (int i = 0; i < prompts.size(); i++) {
        for (int j = 0; j < samples; j++) {
          Artifact.VideoArtifact video =
              engine
                  .submit(Request.text(TaskType.T2V, prompts.get(i), settings.of(i, j)))
                  .result()
                  .get(300, TimeUnit.SECONDS)
                  .artifact(Artifact.VideoArtifact.class);
          sum += reward.reward(RgbClip.fromFrames(video.frames()), prompts.get(i));
        }
      }
    }
    double mean = sum / (prompts.size() * samples);
    System.out.printf(Locale.ROOT, "%s: mean %.4f%n", what, mean);
    return mean;
  }

  private static Optional<String> euler() {
    return Optional.of("euler");
  }
}

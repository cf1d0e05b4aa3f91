package dev.stepweave.training.shapes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.GenerationDefaults;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.models.wan.embedded.EmbeddedWan;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.training.data.RgbClip;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The judge on what {@code ./stepweave generate} makes: the embedded default at its card's settings
 * on twelve shapes prompts (every colour, shape, direction and background at least twice; seeds
 * 100–111, none of which the judging in docs/training.md used). Issue 16 asks that at least {@link
 * #TRAINED_BAR} of all attributes be right (the untrained default scored 0.40 here); and so that a
 * good score on three cannot hide a lost fourth, each attribute on its own at least {@link
 * #ATTRIBUTE_BAR}.
 */
class EmbeddedDefaultJudgeTest {
  /** The share of attributes the trained default must get right (issue 16, item 6). */
  static final double TRAINED_BAR = 0.90;

  /** The share of prompts each attribute (background, colour, shape, direction) must get right. */
  static final double ATTRIBUTE_BAR = 0.75;

  @TempDir Path home;

  @Test
  void theDefaultDrawsTheBackgroundColourShapeAndDirectionItsPromptsAskFor() throws Exception {
    List<ShapeCaption> prompts =
        List.of(
                "a red ball moving left on a black background",
                "a green square moving right on a gray background",
                "a blue ball moving up on a purple background",
                "a yellow square moving down on a black background",
                "a white ball moving right on a purple background",
                "a red square moving up on a gray background",
                "a green ball moving down on a purple background",
                "a blue square moving left on a gray background",
                "a yellow ball moving left on a purple background",
                "a white square moving up on a black background",
                "a red ball moving down on a gray background",
                "a blue square moving right on a black background")
            .stream()
            .map(ShapeCaption::parse)
            .toList();
    ShapesJudge judge = new ShapesJudge();
    double total = 0;
    int backgrounds = 0;
    int colors = 0;
    int shapes = 0;
    int directions = 0;
    try (WanModel model = WanModel.load(EmbeddedWan.ensure(home), new CpuBackend(2));
        Engine engine = new Engine(model)) {
      GenerationDefaults d = model.card().defaults();
      for (int i = 0; i < prompts.size(); i++) {
        ShapeCaption wanted = prompts.get(i);
        var params =
            new DiffusionParams(
                d.steps(),
                d.guidance(),
                100 + i,
                d.width(),
                d.height(),
                d.frames(),
                d.fps(),
                "",
                Optional.empty(),
                Optional.empty());
        Artifact.VideoArtifact video =
            engine
                .submit(Request.text(TaskType.T2V, wanted.text(), params))
                .result()
                .get(300, TimeUnit.SECONDS)
                .artifact(Artifact.VideoArtifact.class);
        RgbClip clip = RgbClip.fromFrames(video.frames());
        assertEquals(d.frames(), clip.frames());
        Verdict v = judge.judge(clip, wanted);
        System.out.printf(
            Locale.ROOT,
            "embedded default: '%s' -> saw %s, score %.2f%n",
            wanted.text(),
            v.seen(),
            v.score());
        total += v.score();
        backgrounds += v.backgroundRight() ? 1 : 0;
        colors += v.colorRight() ? 1 : 0;
        shapes += v.shapeRight() ? 1 : 0;
        directions += v.directionRight() ? 1 : 0;
      }
    }
    int n = prompts.size();
    double score = total / n;
    System.out.printf(
        Locale.ROOT,
        "embedded default judged: %.3f of attributes right over %d prompts (background %d,"
            + " colour %d, shape %d, direction %d; issue 16 asks for %.2f)%n",
        score,
        n,
        backgrounds,
        colors,
        shapes,
        directions,
        TRAINED_BAR);
    assertTrue(
        score >= TRAINED_BAR, "score " + score + " of attributes right, under " + TRAINED_BAR);
    assertTrue(backgrounds >= ATTRIBUTE_BAR * n, backgrounds + " of " + n + " backgrounds right");
    assertTrue(colors >= ATTRIBUTE_BAR * n, colors + " of " + n + " object colours right");
    assertTrue(shapes >= ATTRIBUTE_BAR * n, shapes + " of " + n + " object shapes right");
    assertTrue(directions >= ATTRIBUTE_BAR * n, directions + " of " + n + " directions right");
  }
}

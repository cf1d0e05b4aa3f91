package dev.stepweave.training.shapes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.training.data.RgbClip;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;

class ShapesJudgeTest {
  private final ShapesJudge judge = new ShapesJudge();

  /** Sizes and frame counts the dataset is judged at: square, wide, tall, small and larger. */
  private static final List<ShapesDataset> DATASETS =
      List.of(
          new ShapesDataset(1, 64, 64, 9),
          new ShapesDataset(2, 64, 64, 5),
          new ShapesDataset(3, 96, 64, 9),
          new ShapesDataset(4, 64, 96, 9),
          new ShapesDataset(5, 128, 128, 17),
          new ShapesDataset(6, 80, 112, 9),
          new ShapesDataset(7, 64, 64, 2),
          new ShapesDataset(-8, 160, 96, 13));

  private static final int CLIPS_PER_DATASET = 400;

  @Test
  void judgesTheShapesDatasetItselfRight() {
    int[] wrong = new int[Verdict.ATTRIBUTES];
    int clips = 0;
    double total = 0;
    for (ShapesDataset d : DATASETS) {
      for (int i = 0; i < CLIPS_PER_DATASET; i++) {
        ShapeSample s = d.sample(i);
        Verdict v = judge.judge(s.clip(), s.caption());
        wrong[0] += v.backgroundRight() ? 0 : 1;
        wrong[1] += v.colorRight() ? 0 : 1;
        wrong[2] += v.shapeRight() ? 0 : 1;
        wrong[3] += v.directionRight() ? 0 : 1;
        total += v.score();
        clips++;
      }
    }
    double accuracy = total / clips;
    System.out.printf(
        Locale.ROOT,
        "shapes judge on its own dataset: %.4f of %d attributes right over %d clips"
            + " (wrong: background %d, colour %d, shape %d, direction %d)%n",
        accuracy,
        clips * Verdict.ATTRIBUTES,
        clips,
        wrong[0],
        wrong[1],
        wrong[2],
        wrong[3]);
    assertTrue(accuracy >= 0.99, "judge accuracy on the dataset " + accuracy);
  }

  @Test
  void staysRightOnBlurredNoisyClips() {
    // What a decoder's output looks like more than the renderer's: soft edges, grain.
    SplitMix64 rng = new SplitMix64(7);
    int[] wrong = new int[Verdict.ATTRIBUTES];
    int clips = 0;
    double total = 0;
    for (ShapesDataset d :
        List.of(new ShapesDataset(21, 64, 64, 9), new ShapesDataset(22, 96, 64, 9))) {
      for (int i = 0; i < 300; i++) {
        ShapeSample s = d.sample(i);
        Verdict v = judge.judge(perturbed(s.clip(), rng), s.caption());
        wrong[0] += v.backgroundRight() ? 0 : 1;
        wrong[1] += v.colorRight() ? 0 : 1;
        wrong[2] += v.shapeRight() ? 0 : 1;
        wrong[3] += v.directionRight() ? 0 : 1;
        total += v.score();
        clips++;
      }
    }
    double accuracy = total / clips;
    System.out.printf(
        Locale.ROOT,
        "shapes judge on blurred (3x3 box) clips with uniform noise of +-24: %.4f over %d clips"
            + " (wrong: background %d, colour %d, shape %d, direction %d)%n",
        accuracy,
        clips,
        wrong[0],
        wrong[1],
        wrong[2],
        wrong[3]);
    assertTrue(accuracy >= 0.99, "judge accuracy on perturbed clips " + accuracy);
  }

  /** A 3×3 box blur of every frame, then uniform noise in [−24, 24] per channel. */
  private static RgbClip perturbed(RgbClip clip, SplitMix64 rng) {
    int w = clip.width();
    int h = clip.height();
    byte[] out = new byte[clip.frames() * h * w * 3];
    for (int f = 0; f < clip.frames(); f++) {
      for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) {
          for (int c = 0; c < 3; c++) {
            int sum = 0;
            int n = 0;
            for (int dy = -1; dy <= 1; dy++) {
              for (int dx = -1; dx <= 1; dx++) {
                int yy = y + dy;
                int xx = x + dx;
                if (yy >= 0 && yy < h && xx >= 0 && xx < w) {
                  sum += clip.get(f, yy, xx, c);
                  n++;
                }
              }
            }
            int v = sum / n + rng.nextInt(49) - 24;
            out[((f * h + y) * w + x) * 3 + c] = (byte) Math.clamp(v, 0, 255);
          }
        }
      }
    }
    return new RgbClip(clip.frames(), h, w, out);
  }

  @Test
  void scoresNoiseAboutChance() {
    SplitMix64 rng = new SplitMix64(42);
    List<ShapeCaption> captions = ShapeCaption.all();
    int clips = 300;
    double total = 0;
    for (int n = 0; n < clips; n++) {
      byte[] rgb = new byte[9 * 64 * 64 * 3];
      for (int i = 0; i < rgb.length; i++) {
        rgb[i] = (byte) rng.nextInt(256);
      }
      ShapeCaption wanted = captions.get(rng.nextInt(captions.size()));
      total += judge.judge(new RgbClip(9, 64, 64, rgb), wanted).score();
    }
    // A guess at random gets 1/3, 1/5, 1/2 and 1/4 of the four attributes.
    double chance = (1 / 3.0 + 1 / 5.0 + 1 / 2.0 + 1 / 4.0) / 4;
    double score = total / clips;
    System.out.printf(
        Locale.ROOT,
        "shapes judge on noise: %.4f over %d clips (chance %.4f)%n",
        score,
        clips,
        chance);
    assertTrue(score <= chance + 0.08, "noise scores " + score + ", chance is " + chance);
    assertTrue(score >= chance - 0.15, "noise scores " + score + ", chance is " + chance);
  }

  @Test
  void aPlainClipHasABackgroundAndNoObject() {
    ShapesDataset d = new ShapesDataset(9, 64, 64, 9);
    ShapeSample s = d.sample(0);
    byte[] plain = new byte[9 * 64 * 64 * 3];
    Rgb bg = s.caption().background().rgb();
    for (int p = 0; p < plain.length; p += 3) {
      plain[p] = (byte) bg.r();
      plain[p + 1] = (byte) bg.g();
      plain[p + 2] = (byte) bg.b();
    }
    Verdict v = judge.judge(new RgbClip(9, 64, 64, plain), s.caption());
    assertTrue(v.backgroundRight());
    assertTrue(v.seen().color().isEmpty());
    assertEquals(0.25, v.score());
  }

  @Test
  void aStillObjectHasNoDirection() {
    ShapesDataset d = new ShapesDataset(10, 64, 64, 9);
    ShapeMotion m = d.motion(3);
    ShapeMotion still =
        new ShapeMotion(
            m.caption(),
            64,
            64,
            9,
            m.size(),
            m.startX16(),
            m.startY16(),
            m.startX16(),
            m.startY16());
    Verdict v = judge.judge(ShapesRenderer.render(still), m.caption());
    assertTrue(v.seen().direction().isEmpty(), v.toString());
    assertEquals(0.75, v.score());
  }

  @Test
  void rewardParsesTheCaptionAndRefusesOtherPrompts() {
    ShapeSample s = new ShapesDataset(11, 64, 64, 9).sample(5);
    assertEquals(1.0, judge.reward(s.clip(), s.caption().text()));
    var e = assertThrows(IllegalArgumentException.class, () -> judge.reward(s.clip(), "a cat"));
    assertTrue(e.getMessage().startsWith("not a shapes caption: 'a cat'"), e.getMessage());
  }
}

package dev.stepweave.training.shapes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.security.MessageDigest;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ShapesDatasetTest {
  @Test
  void aClipIsAPureFunctionOfSeedIndexSizeAndFrames() {
    ShapesDataset d = new ShapesDataset(7, 64, 64, 9);
    assertEquals(d.sample(3), new ShapesDataset(7, 64, 64, 9).sample(3));
    assertNotEquals(d.sample(3).clip(), d.sample(4).clip());
    assertNotEquals(d.sample(3).clip(), new ShapesDataset(8, 64, 64, 9).sample(3).clip());
  }

  @Test
  void theBytesAreTheOnesThisProjectPinned() throws Exception {
    // Pinned when the renderer was written: a change to the generator, the sampling or the
    // renderer changes every dataset made from a seed, and must be deliberate.
    MessageDigest sha = MessageDigest.getInstance("SHA-256");
    ShapesDataset d = new ShapesDataset(1, 64, 64, 9);
    for (int i = 0; i < 16; i++) {
      sha.update(d.sample(i).caption().text().getBytes(java.nio.charset.StandardCharsets.UTF_8));
      sha.update(d.sample(i).clip().bytes());
    }
    assertEquals(
        "610f99b8d7ff10a3da8aa258d13678f9d05f555d84e3cdbae9bd7e84587f1601",
        HexFormat.of().formatHex(sha.digest()));
  }

  @Test
  void everyClipMovesAThirdOfTheFrameAndStaysInside() {
    for (ShapesDataset d :
        new ShapesDataset[] {
          new ShapesDataset(1, 64, 64, 9),
          new ShapesDataset(2, 160, 64, 5),
          new ShapesDataset(3, 64, 128, 17),
          new ShapesDataset(4, 64, 64, 9, 24, 40, 0),
          new ShapesDataset(5, 64, 64, 9, 16, 28, 32)
        }) {
      for (int i = 0; i < 500; i++) {
        ShapeMotion m = d.motion(i);
        int sub = ShapeMotion.SUBPIXELS;
        boolean horizontal = m.caption().direction().horizontal();
        int along = horizontal ? d.width() : d.height();
        int travel =
            Math.abs(
                horizontal ? m.x16(d.frames() - 1) - m.x16(0) : m.y16(d.frames() - 1) - m.y16(0));
        assertTrue(3 * travel >= along * sub, "clip " + i + " travels " + travel / 16.0);
        assertTrue(travel >= d.minTravel() * sub, "clip " + i + " travels " + travel / 16.0);
        int sign =
            Integer.signum(horizontal ? m.endX16() - m.startX16() : m.endY16() - m.startY16());
        Direction dir = m.caption().direction();
        assertEquals(horizontal ? dir.dx() : dir.dy(), sign);
        for (int f = 0; f < d.frames(); f++) {
          assertTrue(m.x16(f) >= sub && m.x16(f) + m.size() * sub <= (d.width() - 1) * sub);
          assertTrue(m.y16(f) >= sub && m.y16(f) + m.size() * sub <= (d.height() - 1) * sub);
        }
        assertTrue(m.size() >= d.smallest() && m.size() <= d.largest(), "size " + m.size());
      }
    }
  }

  @Test
  void everyAttributeValueAppears() {
    ShapesDataset d = new ShapesDataset(5, 64, 64, 9);
    Set<ShapeCaption> captions = new HashSet<>();
    Set<Integer> sizes = new HashSet<>();
    for (int i = 0; i < 2000; i++) {
      ShapeMotion m = d.motion(i);
      captions.add(m.caption());
      sizes.add(m.size());
    }
    assertEquals(Set.copyOf(ShapeCaption.all()), captions);
    assertEquals(64 / 3 - 64 / 6 + 1, sizes.size());
  }

  @Test
  void theObjectAndBackgroundArePaletteColours() {
    ShapeSample s = new ShapesDataset(3, 64, 64, 9).sample(0);
    Rgb bg = s.caption().background().rgb();
    assertEquals(bg.r(), s.clip().get(0, 0, 0, 0));
    assertEquals(bg.g(), s.clip().get(0, 0, 0, 1));
    assertEquals(bg.b(), s.clip().get(0, 0, 0, 2));
    ShapeMotion m = s.motion();
    int cx = m.x16(0) / 16 + m.size() / 2;
    int cy = m.y16(0) / 16 + m.size() / 2;
    Rgb fg = s.caption().color().rgb();
    assertEquals(fg.r(), s.clip().get(0, cy, cx, 0));
    assertEquals(fg.g(), s.clip().get(0, cy, cx, 1));
    assertEquals(fg.b(), s.clip().get(0, cy, cx, 2));
  }

  @Test
  void captionsReadBackAndBadOnesSayWhy() {
    for (ShapeCaption c : ShapeCaption.all()) {
      assertEquals(c, ShapeCaption.parse(c.text()));
    }
    assertEquals(
        "a red ball moving left on a black background",
        ShapeCaption.parse("  A Red  BALL moving left on a black background ").text());
    var pink =
        assertThrows(
            IllegalArgumentException.class,
            () -> ShapeCaption.parse("a pink ball moving left on a black background"));
    assertEquals(
        "caption 'a pink ball moving left on a black background': unknown color 'pink' (known:"
            + " red, green, blue, yellow, white)",
        pink.getMessage());
    var other = assertThrows(IllegalArgumentException.class, () -> ShapeCaption.parse("a dog"));
    assertEquals(
        "not a shapes caption: 'a dog' (expected 'a {color} {shape} moving {direction} on a"
            + " {background} background')",
        other.getMessage());
    assertEquals(EnumSet.allOf(Direction.class).size() * 30, ShapeCaption.all().size());
  }

  @Test
  void aOneFrameClipIsTheFirstFrameOfTheMovingClip() {
    ShapesDataset stills = new ShapesDataset(3, 64, 64, 1);
    ShapesDataset clips = new ShapesDataset(3, 64, 64, 9);
    for (int i = 0; i < 20; i++) {
      ShapeSample still = stills.sample(i);
      ShapeSample clip = clips.sample(i);
      assertEquals(1, still.clip().frames());
      assertEquals(clip.caption(), still.caption());
      byte[] first = java.util.Arrays.copyOf(clip.clip().bytes(), 64 * 64 * 3);
      assertTrue(java.util.Arrays.equals(first, still.clip().bytes()), "clip " + i);
    }
  }

  /** The shipped DiT's card names its data as this does (the dataset id is part of the recipe). */
  @Test
  void theDescriptionNamesObjectsOnlyWhenTheyAreNotTheDefaultOnes() {
    assertEquals(
        "shapes seed 2, 64x64, 9 frames, clips 0-4095",
        new ShapesDataset(2, 64, 64, 9).description(4096));
    assertEquals(
        "shapes seed 2, 64x64, 9 frames, clips 0-4095, objects 20-36 px",
        new ShapesDataset(2, 64, 64, 9, 20, 36, 0).description(4096));
    assertEquals(
        "shapes seed 2, 64x64, 9 frames, clips 0-4095, objects 16-24 px travelling 38 px or more",
        new ShapesDataset(2, 64, 64, 9, 16, 24, 38).description(4096));
  }

  @Test
  void badSettingsAreRefusedInOneLine() {
    assertEquals(
        "shapes clips are at least 64x64, got 48x64",
        assertThrows(IllegalArgumentException.class, () -> new ShapesDataset(1, 48, 64, 9))
            .getMessage());
    assertEquals(
        "shapes clips need 1 frame or more, got 0",
        assertThrows(IllegalArgumentException.class, () -> new ShapesDataset(1, 64, 64, 0))
            .getMessage());
    assertEquals(
        "shapes object sizes must be 1 or more, smallest first, got 30-20",
        assertThrows(
                IllegalArgumentException.class, () -> new ShapesDataset(1, 64, 64, 9, 30, 20, 0))
            .getMessage());
    assertEquals(
        "a 41-pixel object cannot travel a third of a 64x96 frame",
        assertThrows(
                IllegalArgumentException.class, () -> new ShapesDataset(1, 64, 96, 9, 8, 41, 0))
            .getMessage());
    assertEquals(
        "shapes objects travel at least a third of the frame (22 pixels here), got a minimum of 20",
        assertThrows(
                IllegalArgumentException.class, () -> new ShapesDataset(1, 64, 64, 9, 10, 21, 20))
            .getMessage());
    assertEquals(
        "a 30-pixel object cannot travel 40 pixels across a 64x64 frame",
        assertThrows(
                IllegalArgumentException.class, () -> new ShapesDataset(1, 64, 64, 9, 10, 30, 40))
            .getMessage());
    assertEquals(
        "clip index must be 0 or more, got -1",
        assertThrows(
                IllegalArgumentException.class, () -> new ShapesDataset(1, 64, 64, 9).sample(-1))
            .getMessage());
  }
}

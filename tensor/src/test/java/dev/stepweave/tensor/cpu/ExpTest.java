package dev.stepweave.tensor.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;
import org.junit.jupiter.api.Test;

class ExpTest {
  private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;

  @Test
  void isAccurateOverTheWholeRange() {
    SplittableRandom random = new SplittableRandom(3);
    for (int i = 0; i < 200_000; i++) {
      float x = (float) (Exp.LOW + random.nextDouble() * (Exp.HIGH - Exp.LOW));
      double exact = StrictMath.exp(x);
      double error = Math.abs(Exp.exp(x) - exact) / exact;
      assertTrue(error < 2.5e-7, "exp(" + x + ") off by " + error);
    }
  }

  @Test
  void handlesTheEdges() {
    assertEquals(1f, Exp.exp(0f));
    assertEquals(0f, Exp.exp(Float.NEGATIVE_INFINITY));
    assertEquals(0f, Exp.exp(-100f));
    assertEquals(Float.POSITIVE_INFINITY, Exp.exp(Float.POSITIVE_INFINITY));
    assertTrue(Float.isNaN(Exp.exp(Float.NaN)));
  }

  @Test
  void vectorAndScalarFormsGiveTheSameBits() {
    SplittableRandom random = new SplittableRandom(5);
    float[] x = new float[S.length() * 4096];
    for (int i = 0; i < x.length; i++) {
      x[i] = (float) (random.nextDouble() * 200 - 100);
    }
    x[0] = Float.NEGATIVE_INFINITY;
    x[1] = Float.POSITIVE_INFINITY;
    x[2] = Float.NaN;
    x[3] = Exp.LOW;
    x[4] = Exp.HIGH;
    float[] y = new float[x.length];
    for (int i = 0; i < x.length; i += S.length()) {
      Exp.exp(FloatVector.fromArray(S, x, i)).intoArray(y, i);
    }
    for (int i = 0; i < x.length; i++) {
      assertEquals(
          Float.floatToIntBits(Exp.exp(x[i])), Float.floatToIntBits(y[i]), "exp(" + x[i] + ")");
    }
  }
}

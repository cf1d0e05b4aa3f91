package dev.stepweave.tensor.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@code e^x} in F32 from basic IEEE operations only, so the scalar and vector forms give the same
 * bits as each other and in every JIT state (unlike {@code Math.exp}, whose intrinsic may differ
 * from the interpreter). About 1e-7 relative error on {@code [-86.5, 88.5]}; below that the result
 * is flushed to zero (the true value is under 3e-38), above it is infinite.
 *
 * <p>Method: {@code x = n·ln2 + r} with {@code |r| <= ln2/2} (n rounded by the 1.5·2^23 trick, ln2
 * split in two for an exact reduction), {@code e^r} by its Taylor series to degree 7, and {@code
 * 2^n} built in the exponent bits as {@code 2^(n-1)·2} so that n = 128 does not overflow early.
 */
final class Exp {
  static final float LOW = -86.5f;
  static final float HIGH = 88.5f;

  private static final float LOG2E = 1.44269504f;
  private static final float ROUNDER = 12582912f;
  private static final int ROUNDER_BITS = Float.floatToRawIntBits(ROUNDER);
  private static final float LN2_HI = 0.693359375f;
  private static final float LN2_LO = -2.12194440e-4f;
  private static final float[] TAYLOR = {
    1f / 5040, 1f / 720, 1f / 120, 1f / 24, 1f / 6, 1f / 2, 1f, 1f
  };

  private Exp() {}

  static float exp(float x) {
    if (x < LOW) {
      return 0f;
    }
    if (x > HIGH) {
      return Float.POSITIVE_INFINITY;
    }
    float t = x * LOG2E + ROUNDER;
    float n = t - ROUNDER;
    float r = Math.fma(-n, LN2_HI, x);
    r = Math.fma(-n, LN2_LO, r);
    float p = TAYLOR[0];
    for (int i = 1; i < TAYLOR.length; i++) {
      p = Math.fma(p, r, TAYLOR[i]);
    }
    int half = (Float.floatToRawIntBits(t) - ROUNDER_BITS + 126) << 23;
    return p * Float.intBitsToFloat(half) * 2f;
  }

  static FloatVector exp(FloatVector x) {
    FloatVector xc = x.max(LOW).min(HIGH);
    FloatVector t = xc.mul(LOG2E).add(ROUNDER);
    FloatVector n = t.sub(ROUNDER);
    VectorSpecies<Float> s = x.species();
    FloatVector r = n.neg().fma(FloatVector.broadcast(s, LN2_HI), xc);
    r = n.neg().fma(FloatVector.broadcast(s, LN2_LO), r);
    FloatVector p = FloatVector.broadcast(s, TAYLOR[0]);
    for (int i = 1; i < TAYLOR.length; i++) {
      p = p.fma(r, FloatVector.broadcast(s, TAYLOR[i]));
    }
    IntVector half =
        ((IntVector) t.reinterpretAsInts())
            .sub(ROUNDER_BITS - 126)
            .lanewise(VectorOperators.LSHL, 23);
    FloatVector y = p.mul(half.reinterpretAsFloats()).mul(2f);
    return y.blend(0f, x.compare(VectorOperators.LT, LOW))
        .blend(Float.POSITIVE_INFINITY, x.compare(VectorOperators.GT, HIGH));
  }
}

package dev.stepweave.models.sampling;

/**
 * The scalar coefficients of one UniPC update (B(h) variant, data prediction, flow sigmas),
 * computed in float32 as the reference computes them on 0-dim float32 tensors.
 *
 * <p>An update from the anchor point {@code s0} to {@code t} reads {@code x_t = sampleScale · x −
 * anchorScale · m0 − correctionScale · Σ_k rho_k · D_k}, with {@code D_k = (m_k − m0) / r_k} for
 * the older data predictions {@code m_k} and, for the corrector, a last term {@code D = m_t − m0}.
 *
 * @param sampleScale {@code σ_t / σ_s0}
 * @param anchorScale {@code α_t · (e^{−h} − 1)}
 * @param correctionScale {@code α_t · B(h)}
 * @param ratios {@code r_k = (λ_{s_k} − λ_{s0}) / h} of the older points, newest first
 * @param rhos the weights of the difference terms ({@code ratios.length} for the predictor, one
 *     more for the corrector's own term)
 */
record UniPCCoefficients(
    float sampleScale, float anchorScale, float correctionScale, float[] ratios, float[] rhos) {

  /** The B(h) choice of UniPC. */
  enum Variant {
    /** {@code B(h) = h}. */
    BH1,
    /** {@code B(h) = e^h − 1}. */
    BH2
  }

  /**
   * @param sigmas the schedule's sigmas
   * @param target index of the sigma the update reaches
   * @param anchor index of the sigma of the newest data prediction
   * @param older indices of the sigmas of older data predictions, newest first
   * @param order the update's order
   * @param corrector true for the corrector (weights include its own term)
   */
  static UniPCCoefficients compute(
      float[] sigmas,
      int target,
      int anchor,
      int[] older,
      int order,
      boolean corrector,
      Variant v) {
    float sigmaT = sigmas[target];
    float sigmaS0 = sigmas[anchor];
    float alphaT = 1f - sigmaT;
    float lambdaS0 = lambda(sigmaS0);
    float h = lambda(sigmaT) - lambdaS0;

    float[] ratios = new float[older.length];
    for (int k = 0; k < older.length; k++) {
      ratios[k] = (lambda(sigmas[older[k]]) - lambdaS0) / h;
    }

    float hh = -h; // data prediction integrates in −λ
    float hPhi1 = (float) Math.expm1(hh);
    float bh = v == Variant.BH1 ? hh : (float) Math.expm1(hh);

    // Rows R[i] = r^i over the points (older ones, then 1) and b[i] = i!·φ_{i+1}(hh)/B(h).
    float[][] r = new float[order][order];
    float[] b = new float[order];
    float hPhiK = hPhi1 / hh - 1f;
    long factorial = 1;
    for (int i = 0; i < order; i++) {
      for (int j = 0; j < order; j++) {
        float base = j < ratios.length ? ratios[j] : 1f;
        r[i][j] = power(base, i);
      }
      b[i] = hPhiK * factorial / bh;
      factorial *= i + 2;
      hPhiK = hPhiK / hh - (float) (1.0 / factorial);
    }

    float[] rhos;
    if (corrector) {
      rhos = order == 1 ? new float[] {0.5f} : LinearSolve.solve(r, b, order);
    } else if (order == 1) {
      rhos = new float[0];
    } else if (order == 2) {
      rhos = new float[] {0.5f};
    } else {
      rhos = LinearSolve.solve(r, b, order - 1);
    }
    return new UniPCCoefficients(sigmaT / sigmaS0, alphaT * hPhi1, alphaT * bh, ratios, rhos);
  }

  /** {@code λ = log(α) − log(σ)} with flow sigmas ({@code α = 1 − σ}). */
  private static float lambda(float sigma) {
    return (float) Math.log(1f - sigma) - (float) Math.log(sigma);
  }

  private static float power(float base, int exponent) {
    float p = 1f;
    for (int i = 0; i < exponent; i++) {
      p *= base;
    }
    return p;
  }
}

package dev.stepweave.models.sampling;

import dev.stepweave.core.loop.policy.FlowShift;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * diffusers' {@code UniPCMultistepScheduler} in its flow-matching configuration (Wan's): flow
 * sigmas shifted by {@code flow_shift}, a velocity model ({@code flow_prediction}) converted to
 * data predictions, the multistep UniP predictor of {@code solver_order} with the UniC corrector,
 * B(h) variants bh1 and bh2.
 *
 * <p>The schedule is computed in float64 as numpy does and rounded like the reference: sigmas to
 * float32, timesteps truncated to integers. The update coefficients are float32, as the reference
 * computes them on float32 tensors.
 */
public final class FlowUniPCMultistep implements Sampler {
  public static final String DIFFUSERS_CLASS = "UniPCMultistepScheduler";

  /** Keeps the first sigma off 1, where log(α) = log(1 − σ) would be −∞. */
  private static final double FIRST_SIGMA_EPS = 1e-6;

  /** What the last sigma of the schedule is. */
  public enum FinalSigma {
    /** 0: the last step lands on the data prediction. */
    ZERO,
    /** The smallest sigma of the schedule, repeated. */
    SIGMA_MIN
  }

  /**
   * The configuration.
   *
   * @param trainTimesteps {@code num_train_timesteps}
   * @param flowShift {@code flow_shift}
   * @param solverOrder {@code solver_order}
   * @param variant {@code solver_type}
   * @param lowerOrderFinal drop the order near the end so the last steps stay stable
   * @param disableCorrector step indices whose following step skips the corrector
   * @param finalSigma {@code final_sigmas_type}
   */
  public record Config(
      int trainTimesteps,
      double flowShift,
      int solverOrder,
      UniPCCoefficients.Variant variant,
      boolean lowerOrderFinal,
      Set<Integer> disableCorrector,
      FinalSigma finalSigma) {
    public Config {
      if (trainTimesteps < 1 || !(flowShift > 0) || solverOrder < 1) {
        throw new IllegalArgumentException(
            "UniPC needs num_train_timesteps >= 1, flow_shift > 0 and solver_order >= 1");
      }
      disableCorrector = Set.copyOf(disableCorrector);
    }
  }

  private final Config config;

  public FlowUniPCMultistep(Config config) {
    this.config = config;
  }

  public Config config() {
    return config;
  }

  static FlowUniPCMultistep fromConfig(SchedulerConfig c) {
    String name = FlowUniPCMultistep.class.getSimpleName();
    if (!c.flag("use_flow_sigmas", false)) {
      throw c.unsupported("use_flow_sigmas = false", name);
    }
    c.oneOf("prediction_type", "epsilon", name, "flow_prediction");
    if (!c.flag("predict_x0", true)) {
      throw c.unsupported("predict_x0 = false", name);
    }
    for (String feature :
        new String[] {
          "use_karras_sigmas",
          "use_exponential_sigmas",
          "use_beta_sigmas",
          "use_dynamic_shifting",
          "thresholding"
        }) {
      c.rejectEnabled(feature, name);
    }
    c.rejectSet("shift_terminal", name);
    // With flow sigmas the timesteps derive from the sigmas; the spacing is only validated.
    c.oneOf("timestep_spacing", "linspace", name, "linspace", "leading", "trailing");
    // diffusers maps the DPM-Solver names onto bh2.
    String solver = c.oneOf("solver_type", "bh2", name, "bh1", "bh2", "midpoint", "heun", "logrho");
    FinalSigma finalSigma =
        c.oneOf("final_sigmas_type", "zero", name, "zero", "sigma_min").equals("zero")
            ? FinalSigma.ZERO
            : FinalSigma.SIGMA_MIN;
    return new FlowUniPCMultistep(
        new Config(
            c.integer("num_train_timesteps", 1000),
            c.number("flow_shift", 1.0),
            c.integer("solver_order", 2),
            solver.equals("bh1") ? UniPCCoefficients.Variant.BH1 : UniPCCoefficients.Variant.BH2,
            c.flag("lower_order_final", true),
            Set.copyOf(c.integers("disable_corrector")),
            finalSigma));
  }

  @Override
  public SamplerSchedule schedule(int numSteps) {
    if (numSteps < 1) {
      throw new IllegalArgumentException("need at least one step, got " + numSteps);
    }
    int train = config.trainTimesteps();
    FlowShift shift = new FlowShift(config.flowShift());
    double[] base = Linspace.of(1.0, 1.0 / train, numSteps + 1);
    double[] sigmas = new double[numSteps];
    for (int i = 0; i < numSteps; i++) {
      sigmas[i] = shift.apply(base[i]);
    }
    if (Math.abs(sigmas[0] - 1) < FIRST_SIGMA_EPS) {
      sigmas[0] -= FIRST_SIGMA_EPS;
    }
    float[] timesteps = new float[numSteps];
    float[] sigmas32 = new float[numSteps + 1];
    for (int i = 0; i < numSteps; i++) {
      timesteps[i] = (long) (sigmas[i] * train); // the reference truncates to int64
      sigmas32[i] = (float) sigmas[i];
    }
    sigmas32[numSteps] = config.finalSigma() == FinalSigma.ZERO ? 0f : (float) sigmas[numSteps - 1];
    return new SamplerSchedule(timesteps, sigmas32);
  }

  @Override
  public SamplerStep step(Backend backend, SamplerState state, Tensor modelOutput, Tensor sample) {
    int i = state.stepIndex();
    if (state.isFinished()) {
      throw new IllegalStateException("the sampler has run all " + i + " steps");
    }
    float[] sigmas = state.schedule().sigmas();
    int steps = state.schedule().steps();

    // Flow prediction: the data prediction is x − σ·v.
    Tensor data = backend.sub(sample, backend.affine(modelOutput, sigmas[i], 0f));

    Tensor current = sample;
    boolean correct =
        i > 0 && !config.disableCorrector().contains(i - 1) && state.lastSample() != null;
    if (correct) {
      current = correct(backend, state, sigmas, data);
    }

    List<Tensor> history = new ArrayList<>(state.history());
    history.add(data);
    if (history.size() > config.solverOrder()) {
      history.removeFirst();
    }

    int order =
        config.lowerOrderFinal() ? Math.min(config.solverOrder(), steps - i) : config.solverOrder();
    order = Math.min(order, state.lowerOrderCount() + 1); // warm-up: no more points than seen

    UniPCCoefficients c =
        UniPCCoefficients.compute(
            sigmas, i + 1, i, olderIndices(i, order - 1), order, false, config.variant());
    Tensor next = update(backend, c, current, history, null);

    SamplerState after =
        new SamplerState(
            state.schedule(),
            i + 1,
            history,
            current,
            Math.min(state.lowerOrderCount() + 1, config.solverOrder()),
            order,
            state.noiseSeed());
    return new SamplerStep(next, after);
  }

  /** UniC: re-solves the previous step with this step's data prediction as an extra point. */
  private Tensor correct(Backend backend, SamplerState state, float[] sigmas, Tensor data) {
    int i = state.stepIndex();
    int order = state.lastOrder();
    UniPCCoefficients c =
        UniPCCoefficients.compute(
            sigmas, i, i - 1, olderIndices(i - 1, order - 1), order, true, config.variant());
    return update(backend, c, state.lastSample(), state.history(), data);
  }

  /** Sigma indices of the {@code count} data predictions before the one at {@code anchor}. */
  private static int[] olderIndices(int anchor, int count) {
    int[] idx = new int[count];
    for (int k = 0; k < count; k++) {
      idx[k] = anchor - 1 - k;
    }
    return idx;
  }

  /**
   * {@code x_t = sampleScale·x − anchorScale·m0 − correctionScale·(Σ rho_k·D_k [+ rho_last·(own −
   * m0)])}, where m0 is the newest entry of {@code history}.
   */
  private static Tensor update(
      Backend backend, UniPCCoefficients c, Tensor x, List<Tensor> history, Tensor own) {
    Tensor m0 = history.getLast();
    Tensor result =
        backend.sub(
            backend.affine(x, c.sampleScale(), 0f), backend.affine(m0, c.anchorScale(), 0f));
    Tensor residual = null;
    float[] ratios = c.ratios();
    float[] rhos = c.rhos();
    for (int k = 0; k < ratios.length; k++) {
      Tensor older = history.get(history.size() - 2 - k);
      Tensor difference = backend.affine(backend.sub(older, m0), 1f / ratios[k], 0f);
      residual = accumulate(backend, residual, backend.affine(difference, rhos[k], 0f));
    }
    if (own != null) {
      Tensor difference = backend.sub(own, m0);
      residual =
          accumulate(backend, residual, backend.affine(difference, rhos[rhos.length - 1], 0f));
    }
    if (residual == null) {
      return result; // no higher-order term: the reference adds an exact zero here
    }
    return backend.sub(result, backend.affine(residual, c.correctionScale(), 0f));
  }

  private static Tensor accumulate(Backend backend, Tensor sum, Tensor term) {
    return sum == null ? term : backend.add(sum, term);
  }
}

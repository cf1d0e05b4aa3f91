package dev.stepweave.models.wan;

import dev.stepweave.core.loop.BatchableCall;
import dev.stepweave.core.loop.StepResult;
import dev.stepweave.core.loop.policy.CfgPolicy;
import dev.stepweave.core.parity.TapSink;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One request's guided transformer prediction at one denoising step. Alone it runs the branches as
 * its guidance policy dispatches them; batched with other requests' calls it runs every request's
 * branches as one transformer forward (each row with its own timestep and text), then splits the
 * rows and combines each request's branches with its own policy. The transformer is
 * batch-invariant, so a request's prediction is bit-identical either way.
 *
 * @param latents the request's current latents {@code [1, C, F, H, W]}
 * @param timestep the sampler's timestep for this step
 * @param cond conditional text embeddings {@code [1, L, D]}
 * @param uncond unconditional text embeddings, or null when the policy needs none
 * @param step the loop step (policies such as CFG-Zero* depend on it)
 */
record DitCall(
    WanModel model,
    Tensor latents,
    float timestep,
    Tensor cond,
    Tensor uncond,
    CfgPolicy policy,
    int step)
    implements BatchableCall {

  /** Calls of one model batch together; the plan's shape signature fixes the sizes. */
  @Override
  public Object batchKey() {
    return model;
  }

  @Override
  public StepResult run() {
    Backend ops = model.backend();
    var transformer = model.transformer();
    if (!policy.needsUncond()) {
      return StepResult.of(transformer.forward(latents, timesteps(ops, 1), cond, TapSink.NONE));
    }
    if (policy.batched()) {
      Tensor x = ops.concat(List.of(latents, latents), 0);
      Tensor text = ops.concat(List.of(cond, uncond), 0);
      Tensor both = transformer.forward(x, timesteps(ops, 2), text, TapSink.NONE);
      return StepResult.of(policy.combine(ops, both.slice(0, 0, 1), both.slice(0, 1, 2), step));
    }
    Tensor c = transformer.forward(latents, timesteps(ops, 1), cond, TapSink.NONE);
    Tensor u = transformer.forward(latents, timesteps(ops, 1), uncond, TapSink.NONE);
    return StepResult.of(policy.combine(ops, c, u, step));
  }

  @Override
  public List<StepResult> runBatch(List<BatchableCall> calls) {
    Backend ops = model.backend();
    List<DitCall> dits = calls.stream().map(DitCall.class::cast).toList();
    List<Tensor> xs = new ArrayList<>();
    List<Tensor> texts = new ArrayList<>();
    List<Float> ts = new ArrayList<>();
    for (DitCall d : dits) {
      xs.add(d.latents());
      texts.add(d.cond());
      ts.add(d.timestep());
      if (d.policy().needsUncond()) {
        xs.add(d.latents());
        texts.add(d.uncond());
        ts.add(d.timestep());
      }
    }
    float[] t = new float[ts.size()];
    for (int i = 0; i < t.length; i++) {
      t[i] = ts.get(i);
    }
    Tensor out =
        model
            .transformer()
            .forward(
                ops.concat(xs, 0),
                ops.upload(Tensor.of(t, t.length), DType.F32),
                ops.concat(texts, 0),
                TapSink.NONE);
    List<StepResult> results = new ArrayList<>(dits.size());
    int row = 0;
    for (DitCall d : dits) {
      Tensor c = out.slice(0, row, row + 1);
      row++;
      Tensor u = null;
      if (d.policy().needsUncond()) {
        u = out.slice(0, row, row + 1);
        row++;
      }
      results.add(StepResult.of(d.policy().combine(ops, c, u, d.step())));
    }
    return results;
  }

  private Tensor timesteps(Backend ops, int batch) {
    float[] ts = new float[batch];
    Arrays.fill(ts, timestep);
    return ops.upload(Tensor.of(ts, batch), DType.F32);
  }
}

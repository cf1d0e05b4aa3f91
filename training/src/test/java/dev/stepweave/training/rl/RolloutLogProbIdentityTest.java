package dev.stepweave.training.rl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.loop.policy.CfgPolicy;
import dev.stepweave.core.parity.TapSink;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.BehaviorCapture;
import dev.stepweave.core.request.BehaviorRecord;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.OutputSpec;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.models.sampling.FlowSde;
import dev.stepweave.models.sampling.SamplerSchedule;
import dev.stepweave.models.sampling.SamplerState;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.training.autograd.RecordingBackend;
import dev.stepweave.training.autograd.Tape;
import dev.stepweave.training.wan.TrainableTransformer;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Rung C2 for a likelihood-based method (Flow-GRPO-style), gated in CI: the train forward gives
 * every recorded step the very log-probability the rollout recorded — bit for bit on the CPU, in
 * evaluation mode and while recording a tape (the gradient's forward). The rollout runs through the
 * serving engine with the stochastic sampler and classic CFG; the trainer re-evaluates the DiT on
 * the record's latents and conditioning with the serving transformer classes on its own backend.
 */
class RolloutLogProbIdentityTest {
  private static final Path TINY = Path.of(System.getProperty("stepweave.golden"), "wan21-tiny");
  private static final double GUIDANCE = 5.0;

  @Test
  void theTrainForwardReproducesEveryRecordedLogProbability() throws Exception {
    Request rollout =
        Request.builder(
                TaskType.T2V,
                new DiffusionParams(
                    4, GUIDANCE, 11, 32, 32, 9, 8, "blurry", Optional.of("sde"), Optional.empty()))
            .id("c2-rollout")
            .prompt("a red ball bouncing")
            .output(OutputSpec.DEFAULT.capturing(BehaviorCapture.TRAJECTORY))
            .nodeOverrides(Map.of("text_encode", Map.of("max_sequence_length", "16")))
            .build();
    BehaviorRecord record;
    FlowSde sampler;
    try (WanModel model = WanModel.load(TINY, new CpuBackend());
        Engine engine = new Engine(model)) {
      record =
          engine
              .submit(rollout)
              .result()
              .get(120, TimeUnit.SECONDS)
              .artifact(Artifact.BehaviorArtifact.class)
              .record();
      sampler = (FlowSde) model.sampler(rollout);
    }
    assertEquals(Double.toString(sampler.noiseLevel()), record.assumptions().get("noise_level"));

    DiffusersDirectory.Component component = DiffusersDirectory.open(TINY).component("transformer");
    WanTransformerConfig cfg = WanTransformerConfig.fromJson(component.config());
    try (TensorSource weights = component.openWeights()) {
      TrainableTransformer policy = TrainableTransformer.load(cfg, weights, new CpuBackend());
      RecordingBackend ops = (RecordingBackend) policy.backend();
      CfgPolicy guidance = CfgPolicy.forScale(GUIDANCE, false);
      Tensor cond = record.conditioning().get("prompt_embeds");
      Tensor uncond = record.conditioning().get("negative_prompt_embeds");
      SamplerSchedule schedule = new SamplerSchedule(record.timesteps(), record.sigmas());
      for (int i = 0; i < record.steps(); i++) {
        Tensor x = record.latentsBefore(i);
        Tensor t = Tensor.of(new float[] {record.timesteps()[i]}, 1);
        SamplerState state = new SamplerState(schedule, i, List.of(), null, 0, 0, 11);
        int step = i;
        java.util.function.Supplier<Tensor> velocity =
            () ->
                guidance.combine(
                    ops,
                    policy.model().forward(x, t, cond, TapSink.NONE),
                    policy.model().forward(x, t, uncond, TapSink.NONE),
                    step);
        double evaluated =
            sampler
                .transition(ops, state, velocity.get(), x)
                .meanLogProb(ops, record.latentsBefore(i + 1));
        assertEquals(record.logProbs()[i], evaluated, 0.0, "evaluation mode, step " + i);

        Tape tape = new Tape();
        policy.parameters().values().forEach(tape::track);
        Tensor recordedVelocity = ops.recording(tape, velocity::get);
        assertTrue(tape.size() > 50, "the forward was recorded");
        double recorded =
            sampler
                .transition(ops, state, recordedVelocity, x)
                .meanLogProb(ops, record.latentsBefore(i + 1));
        assertEquals(record.logProbs()[i], recorded, 0.0, "recording a tape, step " + i);
      }
    }
  }
}

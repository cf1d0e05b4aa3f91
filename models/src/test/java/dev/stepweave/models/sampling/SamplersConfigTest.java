package dev.stepweave.models.sampling;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Reading scheduler_config.json: the right sampler, and one-line errors for what is missing. */
class SamplersConfigTest {

  private static Sampler parse(String json) {
    return Samplers.fromConfig(SchedulerConfig.parse(json, "scheduler_config.json"));
  }

  private static String errorOf(String json) {
    String message = assertThrows(IllegalArgumentException.class, () -> parse(json)).getMessage();
    assertFalse(message.contains("\n"), "error spans lines: " + message);
    assertTrue(message.startsWith("scheduler_config.json: "), message);
    return message;
  }

  @Test
  void readsTheWanUniPCConfig() {
    Sampler s =
        Samplers.fromConfig(SamplerParityTest.expected().resolve("sched_unipc_config.json"));
    FlowUniPCMultistep unipc = assertInstanceOf(FlowUniPCMultistep.class, s);
    assertEquals(3.0, unipc.config().flowShift());
    assertEquals(2, unipc.config().solverOrder());
    assertEquals(UniPCCoefficients.Variant.BH2, unipc.config().variant());
    assertEquals(FlowUniPCMultistep.FinalSigma.ZERO, unipc.config().finalSigma());
  }

  @Test
  void unknownSchedulerClassIsNamed() {
    String message = errorOf("{\"_class_name\": \"DDIMScheduler\"}");
    assertTrue(message.contains("'DDIMScheduler'"), message);
  }

  @Test
  void unimplementedFeaturesAreRejectedByName() {
    assertTrue(
        errorOf(
                "{\"_class_name\": \"FlowMatchEulerDiscreteScheduler\", \"use_dynamic_shifting\": true}")
            .contains("use_dynamic_shifting"));
    assertTrue(
        errorOf(
                "{\"_class_name\": \"UniPCMultistepScheduler\", \"use_flow_sigmas\": true,"
                    + " \"prediction_type\": \"epsilon\"}")
            .contains("prediction_type"));
    assertTrue(
        errorOf(
                "{\"_class_name\": \"UniPCMultistepScheduler\", \"prediction_type\": \"flow_prediction\"}")
            .contains("use_flow_sigmas"));
    assertTrue(
        errorOf(
                "{\"_class_name\": \"UniPCMultistepScheduler\", \"use_flow_sigmas\": true,"
                    + " \"prediction_type\": \"flow_prediction\", \"solver_order\": \"two\"}")
            .contains("solver_order"));
  }

  @Test
  void sigmaMinFinalRepeatsTheLastSigma() {
    Sampler s =
        parse(
            "{\"_class_name\": \"UniPCMultistepScheduler\", \"use_flow_sigmas\": true,"
                + " \"prediction_type\": \"flow_prediction\", \"flow_shift\": 3.0,"
                + " \"final_sigmas_type\": \"sigma_min\"}");
    float[] sigmas = s.schedule(4).sigmas();
    assertEquals(sigmas[3], sigmas[4]);
    assertTrue(sigmas[4] > 0);
  }

  @Test
  void linspaceFollowsNumpy() {
    assertArrayEquals(new double[] {1.0, 0.75, 0.5, 0.25, 0.0}, Linspace.of(1, 0, 5));
    assertArrayEquals(new double[] {3.0}, Linspace.of(3, 9, 1));
    // numpy.linspace(1, 0.001, 7), as numpy prints it: i·step + start, with the end pinned
    assertArrayEquals(
        new double[] {1.0, 0.8335, 0.667, 0.5005, 0.33399999999999996, 0.16749999999999998, 0.001},
        Linspace.of(1, 0.001, 7));
  }
}

package dev.stepweave.models.parity;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.core.card.CardJson;
import dev.stepweave.core.parity.Comparison;
import dev.stepweave.core.parity.ParityReport;
import dev.stepweave.core.parity.RecordingFormat;
import dev.stepweave.core.parity.Tolerance;
import dev.stepweave.models.wan.WanCards;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.Safetensors;
import dev.stepweave.tensor.io.SafetensorsFile;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The golden recordings, every one of them, checked through the verifier: DiT (output and every
 * tap), UMT5, VAE encode and decode, both samplers at both step counts, the randn table, and the
 * whole pipeline from prompt to frames through the loop contract and the engine facade.
 */
class RecordingVerifierTest {
  private static final Path GOLDEN = Path.of(System.getProperty("stepweave.golden"));
  private static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void theTwoExpertPipelineMatchesTheReferenceExpertByExpert() {
    ParityReport report =
        new RecordingVerifier(GOLDEN.resolve("wan22-moe-tiny"), new CpuBackend(), s -> {})
            .verify(GOLDEN.resolve("wan22-moe-tiny-expected"), c -> {});
    report.comparisons().forEach(c -> System.out.println(c.line()));
    assertEquals(List.of(), report.errors());
    assertTrue(report.passed(), () -> "first divergence: " + report.firstDivergence());
    assertEquals(
        Set.of(
            "pipeline_moe/prompt_ids",
            "pipeline_moe/prompt_embeds",
            "pipeline_moe/negative_prompt_embeds",
            "pipeline_moe/step_latents",
            "pipeline_moe/frames"),
        report.comparisons().stream().map(Comparison::name).collect(Collectors.toSet()));
  }

  @Test
  void theTi2vGoldensMatchVaeTransformerAndBothPipelines() {
    ParityReport report =
        new RecordingVerifier(GOLDEN.resolve("wan22-ti2v-tiny"), new CpuBackend(), s -> {})
            .verify(GOLDEN.resolve("wan22-ti2v-tiny-expected"), c -> {});
    report.comparisons().forEach(c -> System.out.println(c.line()));
    assertEquals(List.of(), report.errors());
    assertTrue(report.passed(), () -> "first divergence: " + report.firstDivergence());
    Set<String> names =
        report.comparisons().stream().map(Comparison::name).collect(Collectors.toSet());
    assertTrue(
        names.containsAll(
            Set.of(
                "vae/latent_mean",
                "vae/decoded",
                "dit/out",
                "pipeline/prompt_ids",
                "pipeline/prompt_embeds",
                "pipeline/negative_prompt_embeds",
                "pipeline/step_latents",
                "pipeline/frames",
                "pipeline_i2v/prompt_ids",
                "pipeline_i2v/prompt_embeds",
                "pipeline_i2v/negative_prompt_embeds",
                "pipeline_i2v/step_latents",
                "pipeline_i2v/frames")),
        names::toString);
  }

  @Test
  void theImageToVideoGoldensMatchEncoderTransformerAndWholePipeline() {
    ParityReport report =
        new RecordingVerifier(GOLDEN.resolve("wan21-i2v-tiny"), new CpuBackend(), s -> {})
            .verify(GOLDEN.resolve("wan21-i2v-tiny-expected"), c -> {});
    report.comparisons().forEach(c -> System.out.println(c.line()));
    assertEquals(List.of(), report.errors());
    assertTrue(report.passed(), () -> "first divergence: " + report.firstDivergence());
    Set<String> names =
        report.comparisons().stream().map(Comparison::name).collect(Collectors.toSet());
    assertTrue(
        names.containsAll(
            Set.of(
                "clip/pixel_values",
                "clip/image_embeds",
                "dit/out",
                "pipeline_i2v/prompt_ids",
                "pipeline_i2v/prompt_embeds",
                "pipeline_i2v/negative_prompt_embeds",
                "pipeline_i2v/image_embeds",
                "pipeline_i2v/condition",
                "pipeline_i2v/step_latents",
                "pipeline_i2v/frames")),
        names::toString);
  }

  @Test
  void theLoraGoldensMatchWithEachAdapterAloneStackedAndNone() {
    ParityReport report =
        new RecordingVerifier(GOLDEN.resolve("wan21-lora-tiny"), new CpuBackend(), s -> {})
            .verify(GOLDEN.resolve("wan21-lora-tiny-expected"), c -> {});
    report.comparisons().forEach(c -> System.out.println(c.line()));
    assertEquals(List.of(), report.errors());
    assertTrue(report.passed(), () -> "first divergence: " + report.firstDivergence());
    assertEquals(
        Set.of(
            "dit_lora/out_none",
            "dit_lora/out_a",
            "dit_lora/out_b",
            "dit_lora/out_ab",
            "pipeline_lora/step_latents",
            "pipeline_lora/frames"),
        report.comparisons().stream().map(Comparison::name).collect(Collectors.toSet()));
  }

  @Test
  void theGoldenPipelineAndEveryComponentMatchTheReference() {
    List<String> log = new ArrayList<>();
    ParityReport report =
        new RecordingVerifier(GOLDEN.resolve("wan21-tiny"), new CpuBackend(), log::add)
            .verify(GOLDEN.resolve("wan21-tiny-expected"), c -> {});
    report.comparisons().forEach(c -> System.out.println(c.line()));
    assertEquals(List.of(), report.errors());
    assertTrue(report.passed(), () -> "first divergence: " + report.firstDivergence());
    Set<String> names =
        report.comparisons().stream().map(Comparison::name).collect(Collectors.toSet());
    for (String expected :
        List.of(
            "dit/out",
            "dit/patch_embedding",
            "dit/temb",
            "dit/timestep_proj",
            "dit/context",
            "dit/block_0",
            "dit/block_1",
            "dit/rope_cos",
            "dit/rope_sin",
            "umt5/last_hidden_state",
            "vae/latent_mean",
            "vae/latent_logvar",
            "vae/decoded",
            "sched_unipc_6/trajectory",
            "sched_unipc_20/trajectory",
            "sched_euler_6/trajectory",
            "sched_euler_20/trajectory",
            "sched_unipc_20/sigmas",
            "sched_euler_6/timesteps",
            "torch_cpu_randn/seed42_1x16x3x4x4",
            "pipeline/prompt_ids",
            "pipeline/prompt_embeds",
            "pipeline/negative_prompt_embeds",
            "pipeline/step_latents",
            "pipeline/frames")) {
      assertTrue(names.contains(expected), "missing comparison " + expected + " in " + names);
    }
  }

  @Test
  void aPerturbedRecordingFailsAtItsFirstDivergence(@TempDir Path dir) throws Exception {
    Path reference = GOLDEN.resolve("wan21-tiny-expected");
    Map<String, Tensor> tensors = new HashMap<>();
    try (SafetensorsFile dit = SafetensorsFile.open(reference.resolve("dit.safetensors"))) {
      for (String key : dit.keys()) {
        tensors.put(key, dit.loadF32(key));
      }
    }
    // Nudge one element of the second block's output past the 1e-4 bound.
    Tensor block1 = tensors.get("block_1");
    block1.setFloat(block1.getFloat(1, 5, 7) + 1e-3f, 1, 5, 7);
    Safetensors.write(dir.resolve("dit.safetensors"), tensors, Map.of());

    ParityReport report =
        new RecordingVerifier(GOLDEN.resolve("wan21-tiny"), new CpuBackend(), s -> {})
            .verify(dir, c -> {});
    assertFalse(report.passed());
    assertEquals("dit/block_1", report.firstDivergence().orElseThrow().name());
    var failed =
        report.comparisons().stream().filter(c -> !c.passed()).map(Comparison::name).toList();
    // block_1 is the only tap that is wrong; the output computed after it is still right.
    assertEquals(List.of("dit/block_1"), failed);
  }

  @Test
  void theBoundsAreTheCheckpointCardsOwn(@TempDir Path dir) throws Exception {
    Path checkpoint = copy(GOLDEN.resolve("wan21-tiny"), dir.resolve("ckpt"));
    ObjectNode card =
        (ObjectNode)
            JSON.readTree(CardJson.toJson(WanCards.cardFor(DiffusersDirectory.open(checkpoint))));
    ObjectNode tolerances = (ObjectNode) card.at("/parity/tolerances");
    tolerances.remove("randn");
    tolerances.put("sampler", 1e-12);
    Files.writeString(checkpoint.resolve(CardJson.FILE_NAME), card.toString());
    Path reference = Files.createDirectories(dir.resolve("reference"));
    for (String f :
        List.of(
            "torch_cpu_randn.safetensors",
            "sched_euler_6.safetensors",
            "sched_euler_config.json")) {
      Files.copy(GOLDEN.resolve("wan21-tiny-expected").resolve(f), reference.resolve(f));
    }
    ParityReport report =
        new RecordingVerifier(checkpoint, new CpuBackend(), s -> {}).verify(reference, c -> {});
    // The card declares no randn bound: that recording cannot be judged at all.
    assertEquals(
        List.of(
            "torch_cpu_randn.safetensors: the card's parity spec has no tolerance for 'randn' (it"
                + " declares [clip, dit, frames, pixel_values, prompt_embeds, prompt_ids, sampler,"
                + " step_latents, umt5, vae])"),
        report.errors());
    // The sampler is held to the card's (here impossible) bound, not the golden 1e-5.
    Comparison trajectory =
        report.comparisons().stream()
            .filter(c -> c.name().equals("sched_euler_6/trajectory"))
            .findFirst()
            .orElseThrow();
    assertEquals(new Tolerance.MaxAbs(1e-12), trajectory.tolerance());
  }

  @Test
  void aRecordingOfANewerSchemaIsAnErrorNamingTheFile(@TempDir Path dir) throws Exception {
    Map<String, Tensor> tensors = new HashMap<>();
    Path reference = GOLDEN.resolve("wan21-tiny-expected");
    try (SafetensorsFile randn =
        SafetensorsFile.open(reference.resolve("torch_cpu_randn.safetensors"))) {
      for (String key : randn.keys()) {
        tensors.put(key, randn.loadF32(key));
      }
    }
    Path file = dir.resolve("torch_cpu_randn.safetensors");
    Safetensors.write(file, tensors, Map.of(RecordingFormat.SCHEMA.field(), "2"));
    ParityReport report =
        new RecordingVerifier(GOLDEN.resolve("wan21-tiny"), new CpuBackend(), s -> {})
            .verify(dir, c -> {});
    assertFalse(report.passed());
    assertEquals(
        List.of("torch_cpu_randn.safetensors: schema_version 2 is newer than this build reads (1)"),
        report.errors());
  }

  private static Path copy(Path from, Path to) throws IOException {
    try (Stream<Path> files = Files.walk(from)) {
      for (Path src : files.sorted().toList()) {
        Path dst = to.resolve(from.relativize(src).toString());
        if (Files.isDirectory(src)) {
          Files.createDirectories(dst);
        } else {
          Files.copy(src, dst);
        }
      }
    }
    return to;
  }

  @Test
  void aRecordingWithoutItsInputsIsAnErrorNotAPass(@TempDir Path dir) throws Exception {
    Safetensors.write(
        dir.resolve("umt5.safetensors"),
        Map.of("last_hidden_state", Tensor.zeros(DType.F32, 1, 2, 24)),
        Map.of());
    ParityReport report =
        new RecordingVerifier(GOLDEN.resolve("wan21-tiny"), new CpuBackend(), s -> {})
            .verify(dir, c -> {});
    assertFalse(report.passed());
    assertEquals(1, report.errors().size());
    assertTrue(report.errors().getFirst().contains("input_ids"), report.errors().getFirst());
  }
}

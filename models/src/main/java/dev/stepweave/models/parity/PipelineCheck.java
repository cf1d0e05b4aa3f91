package dev.stepweave.models.parity;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.request.AdapterUse;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.ModalPart;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.request.TaskChoice;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.EngineConfig;
import dev.stepweave.core.runtime.GenerationResult;
import dev.stepweave.models.clip.RgbImage;
import dev.stepweave.models.wan.WanCards;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.SafetensorsFile;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ExecutionException;

/**
 * The whole pipeline from prompt to frames, run through the loop contract and the engine facade
 * with the recording's initial latents: one request per prompt of the recording's batch. A
 * recording with an {@code image_uint8} input is an image-to-video run: each request carries that
 * image, and the image embeddings and the condition are compared too (when recorded).
 */
final class PipelineCheck {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final WanModel model;
  private final Path file;
  private final SafetensorsFile rec;
  private final RecordingVerifier.Recorder out;
  private final Extensions deployment;
  private final List<AdapterUse> adapters;

  /**
   * @param deployment the engine's extensions (the adapter registry the requests name)
   * @param adapters the adapters every request stacks
   */
  PipelineCheck(
      WanModel model,
      Path file,
      SafetensorsFile rec,
      RecordingVerifier.Recorder out,
      Extensions deployment,
      List<AdapterUse> adapters) {
    this.model = model;
    this.file = file;
    this.rec = rec;
    this.out = out;
    this.deployment = deployment;
    this.adapters = List.copyOf(adapters);
  }

  void run() {
    Map<String, String> meta = rec.metadata();
    List<String> prompts = prompts(meta("prompt"));
    Tensor initial = RecordingVerifier.input(rec, file, "initial_latents");
    if (initial.dim(0) != prompts.size()) {
      throw new IllegalArgumentException(
          "recording "
              + file
              + ": "
              + prompts.size()
              + " prompts but "
              + initial.dim(0)
              + " rows of initial_latents");
    }
    int maxLength = Integer.parseInt(meta("max_sequence_length"));
    Backend ops = model.backend();
    List<Tensor> ids = new ArrayList<>();
    List<Tensor> cond = new ArrayList<>();
    List<Tensor> uncond = new ArrayList<>();
    List<List<Tensor>> stepLatents = new ArrayList<>(); // [row][step]
    List<Tensor> frames = new ArrayList<>();
    List<Tensor> imageEmbeds = new ArrayList<>();
    List<Tensor> conditions = new ArrayList<>();
    ModalPart.Image image = image();
    try (Engine engine = new Engine(model, EngineConfig.defaults(), deployment)) {
      for (int row = 0; row < prompts.size(); row++) {
        ids.add(model.tokenizer().encode(List.of(prompts.get(row)), maxLength).inputIds());
        Request request =
            request(
                prompts.get(row), initial.slice(0, row, row + 1).toF32(), image, maxLength, meta);
        checkExperts(request);
        List<Tensor> steps = new ArrayList<>();
        var handle =
            engine.submit(
                request,
                checkpoint -> {
                  if (checkpoint.current().loopId().equals(WanCards.DENOISE)) {
                    steps.add(checkpoint.current().tensors().get("latents"));
                  }
                });
        GenerationResult result = handle.result().get();
        var text = result.loopResults().get(WanCards.TEXT_ENCODE);
        cond.add(ops.download(text.tensor("prompt_embeds")));
        if (text.tensors().containsKey("negative_prompt_embeds")) {
          uncond.add(ops.download(text.tensor("negative_prompt_embeds")));
        }
        stepLatents.add(steps);
        var loops = result.loopResults();
        if (loops.containsKey(WanCards.IMAGE_ENCODE)) {
          imageEmbeds.add(
              ops.download(loops.get(WanCards.IMAGE_ENCODE).tensor(IMAGE_EMBEDS_RESULT)));
        }
        Tensor condition =
            loops.containsKey(WanCards.VAE_ENCODE)
                ? loops.get(WanCards.VAE_ENCODE).tensors().get(CONDITION_RESULT)
                : null;
        if (condition != null) {
          conditions.add(ops.download(condition));
        }
        frames.add(result.artifact(Artifact.VideoArtifact.class).frames().unsqueeze(0));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted");
    } catch (ExecutionException e) {
      throw new IllegalStateException(
          "pipeline run failed: " + e.getCause().getMessage(), e.getCause());
    }
    // A recording names the outputs it holds; the text ones are optional (the LoRA recording keeps
    // only latents and frames, its adapters touching the transformer alone).
    if (rec.keys().contains("prompt_ids")) {
      out.compare("prompt_ids", hostConcat(ops, ids, 0), rec.load("prompt_ids"), "prompt_ids");
    }
    if (rec.keys().contains("prompt_embeds")) {
      out.compare(
          "prompt_embeds", hostConcat(ops, cond, 0), rec.load("prompt_embeds"), "prompt_embeds");
    }
    if (rec.keys().contains("negative_prompt_embeds")) {
      if (uncond.isEmpty()) {
        throw new IllegalArgumentException(
            "recording "
                + file
                + " has negative_prompt_embeds but its guidance runs no unconditional branch");
      }
      out.compare(
          "negative_prompt_embeds",
          hostConcat(ops, uncond, 0),
          rec.load("negative_prompt_embeds"),
          "prompt_embeds");
    }
    compareImageOutput("image_embeds", imageEmbeds, "clip");
    compareImageOutput("condition", conditions, "vae");
    List<Tensor> perStep = new ArrayList<>();
    for (int step = 0; step < stepLatents.getFirst().size(); step++) {
      List<Tensor> rows = new ArrayList<>();
      for (List<Tensor> r : stepLatents) {
        rows.add(r.get(step));
      }
      perStep.add(hostConcat(ops, rows, 0).unsqueeze(0));
    }
    out.compare(
        "step_latents",
        hostConcat(ops, perStep, 0),
        RecordingVerifier.input(rec, file, "step_latents"),
        "step_latents");
    out.compare(
        "frames",
        hostConcat(ops, frames, 0),
        RecordingVerifier.input(rec, file, "frames"),
        "frames");
  }

  /** The loops' result names of the image embeddings and the condition. */
  private static final String IMAGE_EMBEDS_RESULT = "image_embeds";

  private static final String CONDITION_RESULT = "condition";

  /**
   * An image-to-video output the recording holds, compared within {@code bound}; one the run made
   * but the recording lacks is not compared, one the recording holds but the run never made is an
   * error (the checkpoint does not run the recorded pipeline).
   */
  private void compareImageOutput(String name, List<Tensor> rows, String bound) {
    if (!rec.keys().contains(name)) {
      return;
    }
    if (rows.isEmpty()) {
      throw new IllegalArgumentException(
          "recording " + file + " has " + name + " but the checkpoint's program makes none");
    }
    out.compare(name, hostConcat(model.backend(), rows, 0), rec.load(name), bound);
  }

  /**
   * The recording's input image ({@code image_uint8}, {@code [H, W, 3]}), or null for
   * text-to-video; its hash, standing in for a file's, is that of its pixels.
   */
  private ModalPart.Image image() {
    if (!rec.keys().contains("image_uint8")) {
      return null;
    }
    RgbImage rgb = RgbImage.of(rec.load("image_uint8"));
    return new ModalPart.Image(rgb.width(), rgb.height(), rgb.rgb(), sha256(rgb.rgb()));
  }

  private static String sha256(byte[] data) {
    try {
      return java.util.HexFormat.of()
          .formatHex(java.security.MessageDigest.getInstance("SHA-256").digest(data));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException("no SHA-256", e);
    }
  }

  /**
   * A two-expert recording says which expert ran each step ({@code experts_per_step}); the model's
   * routing must agree before anything is compared.
   */
  private void checkExperts(Request request) {
    String recorded = rec.metadata().get("experts_per_step");
    if (recorded == null) {
      return;
    }
    List<String> expected = prompts(recorded);
    List<String> ours = model.expertsPerStep(request);
    if (!expected.equals(ours)) {
      throw new IllegalArgumentException(
          "recording " + file + ": experts per step " + expected + ", the model routes " + ours);
    }
  }

  private Request request(
      String prompt,
      Tensor latents,
      ModalPart.Image image,
      int maxLength,
      Map<String, String> meta) {
    int frames = Integer.parseInt(meta("num_frames"));
    var params =
        new DiffusionParams(
            Integer.parseInt(meta("num_inference_steps")),
            Double.parseDouble(meta("guidance_scale")),
            0,
            Integer.parseInt(meta("width")),
            Integer.parseInt(meta("height")),
            frames,
            16,
            meta.getOrDefault("negative_prompt", ""),
            Optional.empty(),
            Optional.empty());
    // A two-expert recording's second guidance scale goes to the denoise loop's guidance_2.
    Map<String, String> denoise =
        meta.containsKey("guidance_scale_2")
            ? Map.of("guidance_2", meta.get("guidance_scale_2"))
            : Map.of();
    List<ModalPart> inputs =
        new ArrayList<>(List.of(new ModalPart.Text(prompt), new ModalPart.Latents(latents)));
    if (image != null) {
      inputs.add(image);
    }
    // The task a product would declare for these inputs on this card (ti2v on a TI2V card).
    TaskType task = TaskChoice.forVideo(model.card(), image != null, "image_uint8");
    return Request.builder(task, params)
        .id("verify-" + UUID.randomUUID())
        .inputs(inputs)
        .nodeOverrides(
            Map.of(
                WanCards.TEXT_ENCODE,
                Map.of("max_sequence_length", Integer.toString(maxLength)),
                WanCards.DENOISE,
                denoise,
                WanCards.VAE_DECODE,
                Map.of("tile", "off")))
        .adapters(adapters)
        .build();
  }

  private String meta(String key) {
    String v = rec.metadata().get(key);
    if (v == null) {
      throw new IllegalArgumentException("recording " + file + " has no '" + key + "' metadata");
    }
    return v;
  }

  /** A prompt string, or a JSON array of prompts for a batch. */
  private static List<String> prompts(String value) {
    String trimmed = value.strip();
    if (trimmed.startsWith("[")) {
      try {
        List<String> out = new ArrayList<>();
        for (JsonNode n : JSON.readTree(trimmed)) {
          out.add(n.asText());
        }
        return out;
      } catch (IOException e) {
        // not JSON after all: a prompt that starts with '['
      }
    }
    return List.of(value);
  }

  /** Joins host-side results for comparison; the backend may keep its result on a device. */
  private static Tensor hostConcat(Backend ops, List<Tensor> parts, int dim) {
    return ops.download(ops.concat(parts, dim));
  }
}

package dev.stepweave.models.parity;

import dev.stepweave.core.extend.AdapterRegistry;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.extend.RegisteredAdapter;
import dev.stepweave.core.extend.ResolvedAdapter;
import dev.stepweave.core.parity.TapSink;
import dev.stepweave.core.request.AdapterUse;
import dev.stepweave.models.clip.RgbImage;
import dev.stepweave.models.sampling.Sampler;
import dev.stepweave.models.sampling.SamplerState;
import dev.stepweave.models.sampling.Samplers;
import dev.stepweave.models.wan.lora.WanAdapters;
import dev.stepweave.models.wan.transformer.AdapterRows;
import dev.stepweave.models.wan.transformer.BlockHooks;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.rng.TorchGenerator;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The recordings the verifier knows, by file name. Each comparison names the card's tolerance it is
 * held to ({@link dev.stepweave.core.card.ParitySpec#tolerance}); the bounds live on the card.
 */
enum RecordingKind {
  RANDN {
    @Override
    void check(
        RecordingVerifier v, Path file, SafetensorsFile rec, RecordingVerifier.Recorder out) {
      Pattern key = Pattern.compile("seed(\\d+)_([0-9x]+)");
      for (String name : rec.keys().stream().sorted().toList()) {
        Matcher m = key.matcher(name);
        if (!m.matches()) {
          throw new IllegalArgumentException(
              "recording " + file + ": key '" + name + "' is not seed{S}_{shape}");
        }
        int[] shape = Arrays.stream(m.group(2).split("x")).mapToInt(Integer::parseInt).toArray();
        Tensor actual = TorchGenerator.seeded(Long.parseLong(m.group(1))).randn(shape);
        out.compare(name, actual, rec.load(name), "randn");
      }
    }
  },
  SAMPLER {
    @Override
    void check(
        RecordingVerifier v, Path file, SafetensorsFile rec, RecordingVerifier.Recorder out) {
      String stem = file.getFileName().toString().replace(".safetensors", "");
      String name = stem.substring(0, stem.lastIndexOf('_'));
      Path config = file.resolveSibling(name + "_config.json");
      if (!Files.isRegularFile(config)) {
        throw new IllegalArgumentException(
            "recording " + file + " has no sampler config " + config.getFileName());
      }
      Sampler sampler = Samplers.fromConfig(config);
      Tensor timesteps = RecordingVerifier.input(rec, file, "timesteps");
      int steps = timesteps.dim(0);
      var schedule = sampler.schedule(steps);
      out.compare("timesteps", Tensor.of(schedule.timesteps(), steps), timesteps, "sampler");
      out.compare(
          "sigmas",
          Tensor.of(schedule.sigmas(), steps + 1),
          RecordingVerifier.input(rec, file, "sigmas"),
          "sampler");
      Backend ops = v.backend();
      Tensor sample = ops.upload(RecordingVerifier.input(rec, file, "initial"), DType.F32);
      SamplerState state = sampler.start(steps);
      List<Tensor> trajectory = new ArrayList<>();
      for (int i = 0; i < steps; i++) {
        Tensor output = syntheticModel(ops, sample, state.timestep());
        var step = sampler.step(ops, state, output, sample);
        sample = step.sample();
        state = step.state();
        trajectory.add(ops.download(sample).unsqueeze(0));
      }
      out.compare(
          "trajectory",
          ops.download(ops.concat(trajectory, 0)),
          RecordingVerifier.input(rec, file, "trajectory"),
          "sampler");
    }

    /** The recording's stand-in network: {@code tanh(0.7·x + 0.001·t) − 0.1·x}. */
    private Tensor syntheticModel(Backend ops, Tensor sample, float t) {
      Tensor inner = ops.affine(sample, 0.7f, 0.001f * t);
      return ops.sub(ops.unary(inner, Backend.UnaryOp.TANH), ops.affine(sample, 0.1f, 0f));
    }
  },
  UMT5 {
    @Override
    void check(
        RecordingVerifier v, Path file, SafetensorsFile rec, RecordingVerifier.Recorder out) {
      var encoder = v.model().textEncoder();
      Backend ops = v.backend();
      Tensor hidden =
          encoder.encode(
              ops.upload(RecordingVerifier.input(rec, file, "input_ids"), DType.I64),
              ops.upload(RecordingVerifier.input(rec, file, "attention_mask"), DType.I64));
      out.compare(
          "last_hidden_state",
          ops.download(hidden),
          RecordingVerifier.input(rec, file, "last_hidden_state"),
          "umt5");
    }
  },
  DIT {
    @Override
    void check(
        RecordingVerifier v, Path file, SafetensorsFile rec, RecordingVerifier.Recorder out) {
      Backend ops = v.backend();
      Map<String, Tensor> taps = new LinkedHashMap<>();
      // Image states are recorded for image-conditioned transformers only; the timestep may be
      // per token ([B, L]).
      Tensor image =
          rec.keys().contains(IMAGE_STATES) ? ops.upload(rec.load(IMAGE_STATES), DType.F32) : null;
      Tensor result =
          v.model()
              .transformer()
              .forward(
                  ops.upload(RecordingVerifier.input(rec, file, "hidden_states"), DType.F32),
                  ops.upload(RecordingVerifier.input(rec, file, "timestep"), DType.F32),
                  ops.upload(
                      RecordingVerifier.input(rec, file, "encoder_hidden_states"), DType.F32),
                  image,
                  (name, value) -> taps.put(name, ops.download(value)));
      taps.forEach(
          (name, value) -> {
            if (rec.keys().contains(name)) {
              out.compare(name, value, rec.load(name), "dit");
            }
          });
      for (String name : rec.keys()) {
        boolean input =
            name.equals("hidden_states")
                || name.equals("timestep")
                || name.equals("encoder_hidden_states")
                || name.equals(IMAGE_STATES);
        if (!input && !name.equals("out") && !taps.containsKey(name)) {
          throw new IllegalArgumentException(
              "recording "
                  + file
                  + " has tap '"
                  + name
                  + "' that the transformer does not produce");
        }
      }
      out.compare("out", ops.download(result), RecordingVerifier.input(rec, file, "out"), "dit");
    }
  },
  /**
   * The image encoder: the processor on {@code image_uint8} against the recorded {@code
   * pixel_values}, and the encoder on the recorded {@code pixel_values} against {@code
   * image_embeds} (so each is judged on its own inputs).
   */
  CLIP {
    @Override
    void check(
        RecordingVerifier v, Path file, SafetensorsFile rec, RecordingVerifier.Recorder out) {
      var model = v.model();
      Tensor pixels = RecordingVerifier.input(rec, file, "pixel_values");
      out.compare(
          "pixel_values",
          model
              .imageProcessor()
              .preprocess(RgbImage.of(RecordingVerifier.input(rec, file, "image_uint8"))),
          pixels,
          "pixel_values");
      out.compare(
          "image_embeds",
          v.backend().download(model.imageEncoder().penultimateHiddenState(pixels.toF32())),
          RecordingVerifier.input(rec, file, "image_embeds"),
          "clip");
    }
  },
  VAE {
    @Override
    void check(
        RecordingVerifier v, Path file, SafetensorsFile rec, RecordingVerifier.Recorder out) {
      Backend ops = v.backend();
      var vae = v.model().vae();
      if (rec.keys().contains("video")) {
        var posterior = vae.encode(ops.upload(rec.load("video"), DType.F32));
        out.compare(
            "latent_mean",
            ops.download(posterior.mean()),
            RecordingVerifier.input(rec, file, "latent_mean"),
            "vae");
        if (rec.keys().contains("latent_logvar")) {
          out.compare(
              "latent_logvar", ops.download(posterior.logvar()), rec.load("latent_logvar"), "vae");
        }
      }
      if (rec.keys().contains("z")) {
        Tensor decoded = vae.decode(ops.upload(rec.load("z"), DType.F32));
        out.compare(
            "decoded", ops.download(decoded), RecordingVerifier.input(rec, file, "decoded"), "vae");
      }
    }
  },
  /**
   * The transformer with adapters: every {@code out_*} output was made with the adapters its
   * metadata names, at their strengths, stacked in order (none for {@code "no adapter"}).
   */
  DIT_LORA {
    @Override
    void check(
        RecordingVerifier v, Path file, SafetensorsFile rec, RecordingVerifier.Recorder out) {
      Backend ops = v.backend();
      AdapterRegistry registry = v.adapters().registry(v.model());
      Tensor hidden = ops.upload(RecordingVerifier.input(rec, file, "hidden_states"), DType.F32);
      Tensor timestep = ops.upload(RecordingVerifier.input(rec, file, "timestep"), DType.F32);
      Tensor text =
          ops.upload(RecordingVerifier.input(rec, file, "encoder_hidden_states"), DType.F32);
      List<String> outputs =
          rec.keys().stream().filter(k -> k.startsWith("out_")).sorted().toList();
      if (outputs.isEmpty()) {
        throw new IllegalArgumentException("recording " + file + " has no out_* outputs");
      }
      for (String name : outputs) {
        String composition = rec.metadata().get(name);
        if (composition == null) {
          throw new IllegalArgumentException(
              "recording " + file + ": output '" + name + "' has no metadata naming its adapters");
        }
        List<WanAdapters.Held> held = new ArrayList<>();
        try {
          List<AdapterRows.Applied> applied = new ArrayList<>();
          for (AdapterUse use : RecordedAdapters.composition(composition, file, name)) {
            RegisteredAdapter a =
                registry
                    .get(use.name())
                    .orElseThrow(
                        () ->
                            new IllegalArgumentException(
                                "recording "
                                    + file
                                    + ": output '"
                                    + name
                                    + "' names adapter '"
                                    + use.name()
                                    + "', which no recording maps to a file"));
            WanAdapters.Held h = v.model().adapters().acquire(new ResolvedAdapter(a, use.scale()));
            held.add(h);
            applied.add(new AdapterRows.Applied(h.adapter(), (float) use.scale()));
          }
          Tensor result =
              v.model()
                  .transformer()
                  .forward(
                      hidden,
                      timestep,
                      text,
                      TapSink.NONE,
                      BlockHooks.NONE,
                      AdapterRows.of(Collections.nCopies(hidden.dim(0), applied)));
          out.compare(name, ops.download(result), rec.load(name), "dit");
        } finally {
          held.forEach(WanAdapters.Held::close);
        }
      }
    }
  },
  PIPELINE {
    @Override
    void check(
        RecordingVerifier v, Path file, SafetensorsFile rec, RecordingVerifier.Recorder out) {
      new PipelineCheck(v.model(), file, rec, out, Extensions.NONE, List.of()).run();
    }
  },
  /** The whole pipeline with the adapters (and strengths) its {@code adapters} metadata names. */
  PIPELINE_LORA {
    @Override
    void check(
        RecordingVerifier v, Path file, SafetensorsFile rec, RecordingVerifier.Recorder out) {
      String composition = rec.metadata().get(RecordedAdapters.ADAPTERS);
      if (composition == null) {
        throw new IllegalArgumentException(
            "recording " + file + " has no '" + RecordedAdapters.ADAPTERS + "' metadata");
      }
      Extensions deployment =
          Extensions.builder().adapters(v.adapters().registry(v.model())).build();
      new PipelineCheck(
              v.model(),
              file,
              rec,
              out,
              deployment,
              RecordedAdapters.composition(composition, file, RecordedAdapters.ADAPTERS))
          .run();
    }
  };

  /** The DiT recordings' image-encoder states (an input, for image-conditioned transformers). */
  private static final String IMAGE_STATES = "encoder_hidden_states_image";

  /** Whether checking this recording needs the checkpoint's components. */
  boolean needsModel() {
    return this != RANDN && this != SAMPLER;
  }

  abstract void check(
      RecordingVerifier v, Path file, SafetensorsFile rec, RecordingVerifier.Recorder out);

  /** The kind a recording file name denotes, or null. */
  static RecordingKind of(String fileName) {
    if (fileName.equals("torch_cpu_randn.safetensors")) {
      return RANDN;
    }
    if (fileName.matches("sched_[a-z0-9]+_\\d+\\.safetensors")) {
      return SAMPLER;
    }
    return switch (fileName) {
      case "umt5.safetensors" -> UMT5;
      case "clip.safetensors" -> CLIP;
      case "dit.safetensors" -> DIT;
      case "vae.safetensors" -> VAE;
      case "pipeline.safetensors", "pipeline_moe.safetensors", "pipeline_i2v.safetensors" ->
          PIPELINE;
      case "dit_lora.safetensors" -> DIT_LORA;
      case "pipeline_lora.safetensors" -> PIPELINE_LORA;
      default -> null;
    };
  }
}

package dev.stepweave.training.run;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.stepweave.core.card.CardJson;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.tensor.Precision;
import dev.stepweave.training.shapes.ShapeCaption;
import dev.stepweave.training.shapes.ShapesDataset;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Predicate;
import java.util.stream.Collectors;

/**
 * Reads a {@link TrainConfig} from YAML ({@code .yaml}, {@code .yml}) or JSON (anything else),
 * strictly: an unknown key, a missing required one, a value of the wrong type or out of range, or
 * settings that do not go together are one {@link TrainConfigException} naming the file and the
 * key, before anything loads.
 */
public final class TrainConfigReader {
  private static final Set<String> TOP =
      Set.of(
          "base",
          "model_id",
          "component",
          "init",
          "data",
          "method",
          "steps",
          "batch",
          "micro_batch",
          "learning_rate",
          "schedule",
          "adamw",
          "weight_decay",
          "max_grad_norm",
          "ema",
          "flow_shift",
          "sigma_range",
          "caption_dropout",
          "latent_statistics",
          "precision",
          "seed",
          "checkpoint_every",
          "keep_checkpoints",
          "evaluation",
          "output");

  private final Path file;
  private final Path folder;

  private TrainConfigReader(Path file) {
    this.file = file;
    this.folder = file.toAbsolutePath().getParent();
  }

  /** Reads and checks {@code file}. */
  public static TrainConfig read(Path file) {
    TrainConfigReader reader = new TrainConfigReader(file);
    String name = file.getFileName().toString().toLowerCase(Locale.ROOT);
    ObjectMapper mapper =
        name.endsWith(".yaml") || name.endsWith(".yml")
            ? new ObjectMapper(new YAMLFactory())
            : new ObjectMapper();
    JsonNode tree;
    try {
      tree = mapper.readTree(Files.readString(file));
    } catch (JsonProcessingException e) {
      throw new TrainConfigException(
          "config "
              + file
              + ": not valid "
              + (mapper.getFactory() instanceof YAMLFactory ? "YAML" : "JSON")
              + ": "
              + firstLine(e.getOriginalMessage()));
    } catch (IOException e) {
      throw new TrainConfigException("config " + file + ": cannot read: " + e.getMessage());
    }
    if (tree == null || !tree.isObject()) {
      throw new TrainConfigException("config " + file + ": must be a mapping of keys to values");
    }
    return reader.parse((ObjectNode) tree);
  }

  private TrainConfig parse(ObjectNode root) {
    known(root, "", TOP);
    TrainConfig.Component component =
        switch (text(root, "component", null)) {
          case "transformer" -> TrainConfig.Component.TRANSFORMER;
          case "vae" -> TrainConfig.Component.VAE;
          case null -> throw bad("component", "is required (transformer or vae)");
          default ->
              throw bad(
                  "component",
                  "must be transformer or vae, got '" + root.get("component").asText() + "'");
        };
    String precision = text(root, "precision", "f32");
    if (!precision.equals("f32") && !precision.equals("bf16")) {
      throw bad("precision", "must be f32 or bf16, got '" + precision + "'");
    }
    Path base = root.has("base") && !text(root, "base", "").equals("embedded") ? base(root) : null;
    int steps = positive(root, "steps", null);
    TrainConfig.Method method = method(root);
    boolean nft = method instanceof TrainConfig.Method.Nft;
    int batch = positive(root, "batch", 1);
    // NFT evaluates each group member alone: its own noise level and optimality.
    int microBatch = positive(root, "micro_batch", nft ? 1 : batch);
    if (batch % microBatch != 0) {
      throw bad("micro_batch", microBatch + " does not divide batch " + batch);
    }
    TrainConfig.Data data = data(root);
    if (component == TrainConfig.Component.VAE && data instanceof TrainConfig.Data.Shards) {
      throw bad(
          "data.type", "'shards' holds latents; component vae trains on clips (shapes or folder)");
    }
    if (component == TrainConfig.Component.VAE && method instanceof TrainConfig.Method.Lora) {
      throw bad("method.type", "lora adapts the transformer only; component vae trains full");
    }
    boolean distill = method instanceof TrainConfig.Method.Distill;
    boolean fromPrompts = distill || nft;
    if (fromPrompts && component != TrainConfig.Component.TRANSFORMER) {
      throw bad(
          "method.type", method.name() + " trains the transformer; component must be transformer");
    }
    if (fromPrompts != data instanceof TrainConfig.Data.Prompts) {
      throw bad(
          "data.type",
          fromPrompts
              ? method.name() + " rolls the base out on prompts: data must be of type prompts"
              : "'prompts' is the data of method distill or nft");
    }
    if (fromPrompts) {
      for (String key : List.of("init", "flow_shift", "sigma_range", "caption_dropout")) {
        if (root.has(key)) {
          throw bad(
              key,
              "does not apply to method "
                  + method.name()
                  + " (it trains the base's transformer on its own samples)");
        }
      }
    }
    TrainConfig.Evaluation evaluation = null;
    if (nft) {
      TrainConfig.Data.Prompts prompts = (TrainConfig.Data.Prompts) data;
      if (prompts.samplesPerPrompt() < 2) {
        throw bad(
            "data.samples_per_prompt",
            "is nft's group size K and must be ≥ 2, got " + prompts.samplesPerPrompt());
      }
      if (batch != prompts.samplesPerPrompt()) {
        throw bad(
            "batch",
            "nft takes one group a step: batch must equal data.samples_per_prompt "
                + prompts.samplesPerPrompt()
                + ", got "
                + batch);
      }
      if (microBatch != 1) {
        throw bad("micro_batch", "nft evaluates each group member alone: must be 1");
      }
      rewardable((TrainConfig.Method.Nft) method, prompts.prompts(), "data.prompts");
      evaluation = evaluation(root, steps);
      if (evaluation != null) {
        rewardable((TrainConfig.Method.Nft) method, evaluation.prompts(), "evaluation.prompts");
      }
    } else if (root.has("evaluation")) {
      throw bad("evaluation", "applies to method nft only");
    }
    TrainConfig.Init init = init(root, method, component);
    if (component == TrainConfig.Component.VAE) {
      for (String key : List.of("flow_shift", "sigma_range", "caption_dropout")) {
        if (root.has(key)) {
          throw bad(key, "applies to component transformer only");
        }
      }
    } else if (root.has("latent_statistics")) {
      throw bad("latent_statistics", "applies to component vae only");
    }
    String statistics =
        text(
            root,
            "latent_statistics",
            init != null && component == TrainConfig.Component.VAE ? "measure" : "keep");
    if (!statistics.equals("measure") && !statistics.equals("keep")) {
      throw bad("latent_statistics", "must be measure or keep, got '" + statistics + "'");
    }
    double learningRate = number(root, "learning_rate", 1e-4);
    if (!(learningRate > 0)) {
      throw bad("learning_rate", "must be > 0, got " + learningRate);
    }
    TrainConfig.Schedule schedule = schedule(root, steps);
    TrainConfig.Adam adam = adam(root);
    double clip = number(root, "max_grad_norm", 1.0);
    if (clip < 0) {
      throw bad("max_grad_norm", "must be ≥ 0 (0: no clipping), got " + clip);
    }
    double ema = root.has("ema") ? number(root, "ema", null) : Double.NaN;
    if (!Double.isNaN(ema) && (ema < 0 || ema > 1)) {
      throw bad("ema", "must lie in [0, 1], got " + ema);
    }
    double shift = number(root, "flow_shift", 1.0);
    if (!(shift > 0)) {
      throw bad("flow_shift", "must be > 0, got " + shift);
    }
    NoiseLevels noiseLevels = noiseLevels(root, shift);
    double dropout = number(root, "caption_dropout", 0.0);
    if (dropout < 0 || dropout > 1) {
      throw bad("caption_dropout", "must lie in [0, 1], got " + dropout);
    }
    long seed = integer(root, "seed", 0L);
    int checkpointEvery = positive(root, "checkpoint_every", steps);
    int keepCheckpoints =
        root.has("keep_checkpoints") ? positive(root, "keep_checkpoints", null) : 0;
    Path output = path(root, "output");
    String modelId = text(root, "model_id", output.getFileName().toString());
    if (modelId.isBlank()) {
      throw bad("model_id", "must not be empty");
    }

    ObjectNode canonical = root.objectNode();
    canonical.put("base", base == null ? "embedded" : base.toString());
    canonical.put("model_id", modelId);
    canonical.put("component", component.folder());
    canonical.set("init", root.has("init") ? root.get("init") : root.nullNode());
    canonical.set("data", root.get("data"));
    canonical.set(
        "method", root.has("method") ? root.get("method") : root.objectNode().put("type", "full"));
    canonical.put("steps", steps);
    canonical.put("batch", batch);
    canonical.put("micro_batch", microBatch);
    canonical.put("learning_rate", learningRate);
    canonical.put(
        "schedule", schedule.kind().name().toLowerCase(Locale.ROOT) + "/" + schedule.warmup());
    canonical.put("adamw", adam.toString());
    canonical.put("max_grad_norm", clip);
    canonical.put("ema", ema);
    canonical.put("flow_shift", shift);
    if (!noiseLevels.whole()) { // absent where whole, so earlier runs' canonical forms still match
      canonical.set("sigma_range", root.get("sigma_range"));
    }
    canonical.put("caption_dropout", dropout);
    canonical.put("latent_statistics", statistics);
    canonical.put("precision", precision);
    canonical.put("seed", seed);
    canonical.put("checkpoint_every", checkpointEvery);
    canonical.set("evaluation", root.has("evaluation") ? root.get("evaluation") : root.nullNode());
    canonical.put("output", output.toString());
    return new TrainConfig(
        base,
        modelId,
        component,
        init,
        data,
        method,
        steps,
        batch,
        microBatch,
        learningRate,
        schedule,
        adam,
        clip,
        ema,
        noiseLevels,
        dropout,
        statistics.equals("measure"),
        precision.equals("bf16") ? Precision.BF16 : Precision.F32,
        seed,
        checkpointEvery,
        keepCheckpoints,
        evaluation,
        output,
        canonical);
  }

  private TrainConfig.Data data(ObjectNode root) {
    ObjectNode n = object(root, "data", "data");
    String type = text(n, "type", "data", null);
    switch (type) {
      case "shapes" -> {
        known(
            n,
            "data.",
            Set.of(
                "type", "clips", "seed", "width", "height", "frames", "object_size", "min_travel"));
        int clips = positive(n, "clips", "data.", null);
        long seed = integer(n, "seed", "data.", 0L);
        int width = positive(n, "width", "data.", 64);
        int height = positive(n, "height", "data.", 64);
        int frames = positive(n, "frames", "data.", 9);
        try {
          ShapesDataset defaults = new ShapesDataset(seed, width, height, frames);
          int smallest = defaults.smallest();
          int largest = defaults.largest();
          if (n.has("object_size")) {
            JsonNode[] sizes =
                pair(
                    n.get("object_size"),
                    "data.object_size",
                    JsonNode::canConvertToInt,
                    "[smallest, largest] in pixels");
            smallest = sizes[0].intValue();
            largest = sizes[1].intValue();
          }
          int minTravel = n.has("min_travel") ? positive(n, "min_travel", "data.", null) : 0;
          ShapesDataset dataset =
              new ShapesDataset(seed, width, height, frames, smallest, largest, minTravel);
          return new TrainConfig.Data.Shapes(clips, dataset);
        } catch (IllegalArgumentException e) {
          throw bad("data", e.getMessage());
        }
      }
      case "folder" -> {
        known(n, "data.", Set.of("type", "path"));
        return new TrainConfig.Data.Folder(directory(n, "data.path"));
      }
      case "shards" -> {
        known(n, "data.", Set.of("type", "path"));
        return new TrainConfig.Data.Shards(directory(n, "data.path"));
      }
      case "prompts" -> {
        known(
            n,
            "data.",
            Set.of("type", "prompts", "samples_per_prompt", "seed", "width", "height", "frames"));
        return new TrainConfig.Data.Prompts(
            prompts(n, "data.prompts"),
            positive(n, "samples_per_prompt", "data.", 4),
            integer(n, "seed", "data.", 0L),
            positive(n, "width", "data.", 64),
            positive(n, "height", "data.", 64),
            positive(n, "frames", "data.", 9));
      }
      case null -> throw bad("data.type", "is required (shapes, folder, shards or prompts)");
      default ->
          throw bad("data.type", "must be shapes, folder, shards or prompts, got '" + type + "'");
    }
  }

  /** A non-empty list of non-empty prompts under {@code n}'s key "prompts". */
  private List<String> prompts(ObjectNode n, String name) {
    JsonNode list = n.get("prompts");
    if (list == null || !list.isArray() || list.isEmpty()) {
      throw bad(name, "must be a non-empty list of prompts");
    }
    List<String> prompts = new ArrayList<>();
    for (int i = 0; i < list.size(); i++) {
      if (!list.get(i).isTextual() || list.get(i).asText().isBlank()) {
        throw bad(name + "[" + i + "]", "must be a prompt (a non-empty string)");
      }
      prompts.add(list.get(i).asText());
    }
    return prompts;
  }

  private TrainConfig.Evaluation evaluation(ObjectNode root, int steps) {
    if (!root.has("evaluation")) {
      return null;
    }
    ObjectNode n = object(root, "evaluation", "evaluation");
    known(n, "evaluation.", Set.of("prompts", "samples_per_prompt", "seed", "every"));
    return new TrainConfig.Evaluation(
        prompts(n, "evaluation.prompts"),
        positive(n, "samples_per_prompt", "evaluation.", 1),
        integer(n, "seed", "evaluation.", 0L),
        positive(n, "every", "evaluation.", steps));
  }

  /** Checks that {@code method}'s reward can score every prompt of {@code prompts}. */
  private void rewardable(TrainConfig.Method.Nft method, List<String> prompts, String name) {
    switch (method.reward()) {
      case SHAPES, SHAPES_COLOR -> {
        for (int i = 0; i < prompts.size(); i++) {
          try {
            ShapeCaption.parse(prompts.get(i));
          } catch (IllegalArgumentException e) {
            throw bad(
                name + "[" + i + "]",
                "the shapes reward judges shapes captions only: " + e.getMessage());
          }
        }
      }
    }
  }

  private TrainConfig.Method method(ObjectNode root) {
    if (!root.has("method")) {
      return new TrainConfig.Method.Full();
    }
    ObjectNode n = object(root, "method", "method");
    String type = text(n, "type", "method", null);
    switch (type) {
      case "full" -> {
        known(n, "method.", Set.of("type"));
        return new TrainConfig.Method.Full();
      }
      case "lora" -> {
        known(n, "method.", Set.of("type", "rank", "alpha", "targets"));
        int rank = positive(n, "rank", "method.", null);
        double alpha = number(n, "alpha", "method.", (double) rank);
        if (!(alpha > 0)) {
          throw bad("method.alpha", "must be > 0, got " + alpha);
        }
        List<String> targets = new ArrayList<>();
        if (n.has("targets")) {
          JsonNode t = n.get("targets");
          if (!t.isArray()) {
            throw bad("method.targets", "must be a list of layer names");
          }
          for (int i = 0; i < t.size(); i++) {
            if (!t.get(i).isTextual() || t.get(i).asText().isBlank()) {
              throw bad("method.targets[" + i + "]", "must be a layer name such as attn1.to_q");
            }
            targets.add(t.get(i).asText());
          }
        }
        return new TrainConfig.Method.Lora(rank, alpha, targets);
      }
      case "distill" -> {
        known(n, "method.", Set.of("type", "student_steps", "teacher_steps", "teacher_guidance"));
        int student = positive(n, "student_steps", "method.", 4);
        int teacher = positive(n, "teacher_steps", "method.", 50);
        if (teacher <= student) {
          throw bad(
              "method.teacher_steps", "must exceed student_steps " + student + ", got " + teacher);
        }
        double guidance = number(n, "teacher_guidance", "method.", 5.0);
        if (guidance < 0) {
          throw bad("method.teacher_guidance", "must be ≥ 0, got " + guidance);
        }
        return new TrainConfig.Method.Distill(student, teacher, guidance);
      }
      case "nft" -> {
        known(n, "method.", Set.of("type", "beta", "sampling_steps", "sampler", "reward"));
        double beta = number(n, "beta", "method.", 1.0);
        if (!(beta > 0)) {
          throw bad("method.beta", "must be > 0, got " + beta);
        }
        int samplingSteps = positive(n, "sampling_steps", "method.", 8);
        String sampler = text(n, "sampler", "method", "unipc");
        if (!DiffusionParams.SAMPLERS.contains(sampler)) {
          throw bad(
              "method.sampler",
              "must be one of "
                  + String.join(", ", DiffusionParams.SAMPLERS)
                  + ", got '"
                  + sampler
                  + "'");
        }
        String rewards =
            Arrays.stream(TrainConfig.Reward.values())
                .map(TrainConfig.Reward::key)
                .collect(Collectors.joining(" or "));
        String named = text(n, "reward", "method", null);
        if (named == null) {
          throw bad("method.reward", "is required (" + rewards + ")");
        }
        TrainConfig.Reward reward =
            Arrays.stream(TrainConfig.Reward.values())
                .filter(r -> r.key().equals(named))
                .findFirst()
                .orElseThrow(
                    () -> bad("method.reward", "must be " + rewards + ", got '" + named + "'"));
        return new TrainConfig.Method.Nft(beta, samplingSteps, sampler, reward);
      }
      case null -> throw bad("method.type", "is required (full, lora, distill or nft)");
      default -> throw bad("method.type", "must be full, lora, distill or nft, got '" + type + "'");
    }
  }

  /** {@code sigma_range: [lowest, highest]} (default [0, 1]) with the flow shift {@code shift}. */
  private NoiseLevels noiseLevels(JsonNode root, double shift) {
    if (!root.has("sigma_range")) {
      return NoiseLevels.shifted(shift);
    }
    JsonNode[] range =
        pair(
            root.get("sigma_range"),
            "sigma_range",
            JsonNode::isNumber,
            "[lowest, highest] noise levels");
    try {
      return new NoiseLevels(shift, range[0].doubleValue(), range[1].doubleValue());
    } catch (IllegalArgumentException e) {
      throw bad("sigma_range", e.getMessage());
    }
  }

  /**
   * {@code node}'s two elements, each of which {@code element} accepts, or a one-line error naming
   * {@code key} and what it {@code mustBe}.
   */
  private JsonNode[] pair(JsonNode node, String key, Predicate<JsonNode> element, String mustBe) {
    if (!node.isArray()
        || node.size() != 2
        || !element.test(node.get(0))
        || !element.test(node.get(1))) {
      throw bad(key, "must be " + mustBe + ", got " + node);
    }
    return new JsonNode[] {node.get(0), node.get(1)};
  }

  private TrainConfig.Init init(
      ObjectNode root, TrainConfig.Method method, TrainConfig.Component component) {
    if (!root.has("init")) {
      return null;
    }
    if (method instanceof TrainConfig.Method.Lora) {
      throw bad("init", "re-initialises a full fine-tune's component; a LoRA keeps its base");
    }
    ObjectNode n = object(root, "init", "init");
    known(n, "init.", Set.of("seed", "config", "past_frames"));
    long seed = integer(n, "seed", "init.", 0L);
    ObjectNode config = n.has("config") ? object(n, "config", "init.config") : root.objectNode();
    String pastFrames = text(n, "past_frames", "init", "random");
    if (!pastFrames.equals("random") && !pastFrames.equals("zero")) {
      throw bad("init.past_frames", "must be random or zero, got '" + pastFrames + "'");
    }
    boolean zero = pastFrames.equals("zero");
    if (zero && component != TrainConfig.Component.VAE) {
      throw bad("init.past_frames", "applies to a VAE's causal convolutions only");
    }
    return new TrainConfig.Init(seed, config, zero);
  }

  private TrainConfig.Schedule schedule(ObjectNode root, int steps) {
    if (!root.has("schedule")) {
      return new TrainConfig.Schedule(TrainConfig.ScheduleKind.CONSTANT, 0);
    }
    ObjectNode n = object(root, "schedule", "schedule");
    known(n, "schedule.", Set.of("type", "warmup"));
    String type = text(n, "type", "schedule", null);
    int warmup = (int) integer(n, "warmup", "schedule.", 0L);
    if (warmup < 0) {
      throw bad("schedule.warmup", "must be ≥ 0, got " + warmup);
    }
    return switch (type) {
      case "constant" -> {
        if (n.has("warmup")) {
          throw bad("schedule.warmup", "does not go with a constant schedule (use warmup)");
        }
        yield new TrainConfig.Schedule(TrainConfig.ScheduleKind.CONSTANT, 0);
      }
      case "warmup" -> {
        if (warmup < 1) {
          throw bad("schedule.warmup", "a warm-up schedule needs warmup ≥ 1");
        }
        yield new TrainConfig.Schedule(TrainConfig.ScheduleKind.WARMUP, warmup);
      }
      case "cosine" -> {
        if (warmup >= steps) {
          throw bad("schedule.warmup", warmup + " must be less than steps " + steps);
        }
        yield new TrainConfig.Schedule(TrainConfig.ScheduleKind.COSINE, warmup);
      }
      case null -> throw bad("schedule.type", "is required (constant, warmup or cosine)");
      default ->
          throw bad("schedule.type", "must be constant, warmup or cosine, got '" + type + "'");
    };
  }

  private TrainConfig.Adam adam(ObjectNode root) {
    double decay = number(root, "weight_decay", 0.01);
    if (decay < 0) {
      throw bad("weight_decay", "must be ≥ 0, got " + decay);
    }
    ObjectNode n = root.has("adamw") ? object(root, "adamw", "adamw") : root.objectNode();
    known(n, "adamw.", Set.of("beta1", "beta2", "eps"));
    double beta1 = number(n, "beta1", "adamw.", 0.9);
    double beta2 = number(n, "beta2", "adamw.", 0.999);
    double eps = number(n, "eps", "adamw.", 1e-8);
    for (var e :
        List.of(java.util.Map.entry("beta1", beta1), java.util.Map.entry("beta2", beta2))) {
      if (e.getValue() < 0 || e.getValue() >= 1) {
        throw bad("adamw." + e.getKey(), "must lie in [0, 1), got " + e.getValue());
      }
    }
    if (!(eps > 0)) {
      throw bad("adamw.eps", "must be > 0, got " + eps);
    }
    return new TrainConfig.Adam(beta1, beta2, eps, decay);
  }

  // --- typed values; each failure names the key -------------------------------------------

  private void known(ObjectNode n, String prefix, Set<String> keys) {
    for (Iterator<String> it = n.fieldNames(); it.hasNext(); ) {
      String k = it.next();
      if (!keys.contains(k)) {
        throw bad(
            prefix + k, "unknown key (known: " + String.join(", ", new TreeSet<>(keys)) + ")");
      }
    }
  }

  private ObjectNode object(ObjectNode n, String key, String name) {
    JsonNode v = n.get(key);
    if (v == null || v.isNull()) {
      throw bad(name, "is required");
    }
    if (!v.isObject()) {
      throw bad(name, "must be a mapping, got " + v.getNodeType().name().toLowerCase(Locale.ROOT));
    }
    return (ObjectNode) v;
  }

  private String text(ObjectNode n, String key, String fallback) {
    return text(n, key, "", fallback);
  }

  private String text(ObjectNode n, String key, String parent, String fallback) {
    JsonNode v = n.get(key);
    if (v == null) {
      return fallback;
    }
    if (!v.isTextual()) {
      throw bad(qualified(parent, key), "must be a string, got " + v);
    }
    return v.asText();
  }

  private int positive(ObjectNode n, String key, Integer fallback) {
    return positive(n, key, "", fallback);
  }

  private int positive(ObjectNode n, String key, String prefix, Integer fallback) {
    if (!n.has(key)) {
      if (fallback == null) {
        throw bad(prefix + key, "is required");
      }
      return fallback;
    }
    JsonNode v = n.get(key);
    if (!v.isIntegralNumber() || !v.canConvertToInt() || v.intValue() < 1) {
      throw bad(prefix + key, "must be a positive integer, got " + v);
    }
    return v.intValue();
  }

  private long integer(ObjectNode n, String key, Long fallback) {
    return integer(n, key, "", fallback);
  }

  private long integer(ObjectNode n, String key, String prefix, Long fallback) {
    if (!n.has(key)) {
      return fallback;
    }
    JsonNode v = n.get(key);
    if (!v.isIntegralNumber() || !v.canConvertToLong()) {
      throw bad(prefix + key, "must be an integer, got " + v);
    }
    return v.longValue();
  }

  private double number(ObjectNode n, String key, Double fallback) {
    return number(n, key, "", fallback);
  }

  /** A number; YAML 1.1 reads {@code 1e-4} (no dot) as a string, so such a string is taken too. */
  private double number(ObjectNode n, String key, String prefix, Double fallback) {
    if (!n.has(key)) {
      return fallback;
    }
    JsonNode v = n.get(key);
    double d;
    if (v.isNumber()) {
      d = v.doubleValue();
    } else if (v.isTextual()) {
      try {
        d = Double.parseDouble(v.asText().strip());
      } catch (NumberFormatException e) {
        throw bad(prefix + key, "must be a number, got " + v);
      }
    } else {
      throw bad(prefix + key, "must be a number, got " + v);
    }
    if (!Double.isFinite(d)) {
      throw bad(prefix + key, "must be finite, got " + v);
    }
    return d;
  }

  private Path path(ObjectNode n, String key) {
    String s = text(n, key.substring(key.lastIndexOf('.') + 1), null);
    if (s == null || s.isBlank()) {
      throw bad(key, "is required (a path, relative to the config's folder)");
    }
    return folder.resolve(s).normalize();
  }

  /**
   * The base checkpoint's directory: given as the directory, or as its card file ({@code
   * card.json}), which must read as a card.
   */
  private Path base(ObjectNode root) {
    Path p = path(root, "base");
    if (Files.isRegularFile(p)) {
      try {
        CardJson.read(p);
      } catch (RuntimeException e) {
        throw bad(
            "base", "is not a model card: " + p + ": " + firstLine(String.valueOf(e.getMessage())));
      }
      if (!p.getFileName().toString().equals(CardJson.FILE_NAME)) {
        throw bad(
            "base", "a card file must be its checkpoint's " + CardJson.FILE_NAME + ", got " + p);
      }
      return p.toAbsolutePath().getParent();
    }
    return directory(root, "base");
  }

  private Path directory(ObjectNode n, String key) {
    Path p = path(n, key);
    if (!Files.isDirectory(p)) {
      throw bad(key, "directory not found: " + p);
    }
    return p;
  }

  private static String qualified(String parent, String key) {
    return parent.isEmpty() ? key : parent + "." + key;
  }

  private TrainConfigException bad(String key, String problem) {
    return new TrainConfigException("config " + file + ": '" + key + "' " + problem);
  }

  private static String firstLine(String s) {
    return s == null ? "" : s.lines().findFirst().orElse("");
  }
}

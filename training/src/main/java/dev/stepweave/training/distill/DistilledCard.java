package dev.stepweave.training.distill;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.core.card.CardJson;
import dev.stepweave.core.card.ConsistencyRung;
import dev.stepweave.core.card.GenerationDefaults;
import dev.stepweave.core.card.ModelCard;
import dev.stepweave.core.card.RecipeSpec;
import dev.stepweave.models.sampling.FlowMatchEuler;
import dev.stepweave.models.wan.WanCards;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.DiffusersDirectory;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.training.run.CheckpointCopy;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * Writes a distilled student as a checkpoint of its own: the teacher's folder with the student's
 * transformer, an Euler scheduler at the teacher's shift (so the sampler a request gets by default
 * is the one the student learned), and a card whose recipe assumes the student's sampler, step
 * count and no guidance — so the runtime refuses other settings and step-reusing caches ({@code
 * Extensions}' few-step rule) for it.
 */
public final class DistilledCard {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String TRANSFORMER = "transformer";
  private static final String SCHEDULER_CONFIG = "scheduler/scheduler_config.json";

  private DistilledCard() {}

  /**
   * @param teacher the teacher's diffusers folder
   * @param out the folder to write (must not exist)
   * @param modelId the student card's id
   * @param student the student's transformer tensors by checkpoint name
   * @param studentSteps the student's Euler steps: its recipe's and its defaults' step count
   * @param provenance how the student was made, for its recipe
   * @param data what it learned from, or null
   * @return {@code out}
   */
  public static Path write(
      Path teacher,
      Path out,
      String modelId,
      Map<String, Tensor> student,
      int studentSteps,
      String provenance,
      RecipeSpec.DataContract data)
      throws IOException {
    DiffusersDirectory base = DiffusersDirectory.open(teacher);
    ModelCard teacherCard = WanCards.cardFor(base);
    Map<String, Tensor> weights = new LinkedHashMap<>();
    try (TensorSource source = base.component(TRANSFORMER).openWeights()) {
      for (String key : new TreeSet<>(source.keys())) {
        weights.put(key, student.containsKey(key) ? student.get(key) : source.loadF32(key));
      }
    }
    CheckpointCopy.write(
        teacher, out, TRANSFORMER, base.component(TRANSFORMER).config(), weights, false);
    Path scheduler = out.resolve(SCHEDULER_CONFIG);
    Files.delete(scheduler); // a link to the teacher's file: replaced, not written through
    Files.writeString(
        scheduler,
        JSON.writeValueAsString(eulerAtTheTeachersShift(teacher.resolve(SCHEDULER_CONFIG))) + "\n",
        StandardCharsets.UTF_8);
    RecipeSpec recipe =
        new RecipeSpec(
            "distill",
            List.of(teacherCard.modelId()),
            provenance,
            WanCards.DENOISE,
            "euler",
            studentSteps,
            null,
            ConsistencyRung.C3,
            CheckpointCopy.weightsHash(base.component(TRANSFORMER).dir()),
            data,
            1.0);
    GenerationDefaults d = teacherCard.defaults();
    ModelCard card =
        new ModelCard(
            modelId,
            teacherCard.family(),
            teacherCard.components(),
            teacherCard.loops(),
            teacherCard.capabilities(),
            recipe,
            teacherCard.parity(),
            teacherCard.caches(),
            teacherCard.parallelism(),
            teacherCard.precision(),
            teacherCard.checkpoint(),
            new GenerationDefaults(d.width(), d.height(), d.frames(), d.fps(), studentSteps, 1.0));
    CardJson.write(card.validate(out.toString()), out.resolve(CardJson.FILE_NAME));
    return out;
  }

  /** diffusers' Euler flow-matching scheduler at the shift the teacher's scheduler uses. */
  private static ObjectNode eulerAtTheTeachersShift(Path teacherScheduler) throws IOException {
    JsonNode t = JSON.readTree(teacherScheduler.toFile());
    double shift = t.path("flow_shift").asDouble(t.path("shift").asDouble(1.0));
    ObjectNode euler = JSON.createObjectNode();
    euler.put("_class_name", FlowMatchEuler.DIFFUSERS_CLASS);
    euler.put("num_train_timesteps", t.path("num_train_timesteps").asInt(1000));
    euler.put("shift", shift);
    return euler;
  }
}

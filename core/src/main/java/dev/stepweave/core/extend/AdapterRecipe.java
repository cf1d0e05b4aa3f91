package dev.stepweave.core.extend;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stepweave.core.card.RecipeSpec.RecipeMismatch;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * What an adapter's weights assume of a run (design §2.1's teeth, carried by an adapter): a 4-step
 * distillation LoRA assumes its sampler, step count, guidance scale and shift, and a request that
 * uses it with others is refused unless it overrides the recipe. Null fields assume nothing.
 *
 * <p>Written as JSON, in the file's safetensors metadata under {@link #METADATA_KEY} or in {@code
 * NAME.recipe.json} beside it: {@code {"method": "distill", "sampler": "euler", "steps": 4,
 * "guidance": 1.0, "shift": 5.0}}.
 *
 * @param method what made the adapter ("distill", "style", …)
 * @param sampler the sampler it assumes, or null
 * @param steps the step count, or null
 * @param guidance the guidance scale, or null
 * @param shift the flow shift, or null
 */
public record AdapterRecipe(
    String method, String sampler, Integer steps, Double guidance, Double shift) {
  /** The safetensors metadata key an adapter's recipe may sit under. */
  public static final String METADATA_KEY = "stepweave.recipe";

  private static final Set<String> FIELDS =
      Set.of("method", "sampler", "steps", "guidance", "shift");

  public AdapterRecipe {
    Objects.requireNonNull(method, "method");
  }

  /**
   * Parses a recipe; an unknown field or a value of the wrong type is an error naming it.
   *
   * @param source where the JSON came from, for the message
   * @throws InvalidAdapterException for JSON that is not a recipe
   */
  public static AdapterRecipe parse(String json, String source) {
    JsonNode n;
    try {
      n = new ObjectMapper().readTree(json);
    } catch (IOException e) {
      throw new InvalidAdapterException(source + ": recipe is not JSON: " + firstLine(e));
    }
    if (n == null || !n.isObject()) {
      throw new InvalidAdapterException(source + ": recipe must be a JSON object");
    }
    for (var it = n.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!FIELDS.contains(f)) {
        throw new InvalidAdapterException(
            source
                + ": unknown recipe field '"
                + f
                + "' (known: guidance, method, sampler, shift, steps)");
      }
    }
    JsonNode method = n.get("method");
    if (method == null || !method.isTextual()) {
      throw new InvalidAdapterException(source + ": recipe field 'method' must be a string");
    }
    JsonNode sampler = n.get("sampler");
    if (sampler != null && !sampler.isTextual()) {
      throw new InvalidAdapterException(source + ": recipe field 'sampler' must be a string");
    }
    JsonNode steps = n.get("steps");
    if (steps != null
        && !(steps.canConvertToInt() && steps.isIntegralNumber() && steps.intValue() > 0)) {
      throw new InvalidAdapterException(
          source + ": recipe field 'steps' must be a positive integer");
    }
    return new AdapterRecipe(
        method.textValue(),
        sampler == null ? null : sampler.textValue(),
        steps == null ? null : steps.intValue(),
        number(n, "guidance", source),
        number(n, "shift", source));
  }

  private static Double number(JsonNode n, String field, String source) {
    JsonNode v = n.get(field);
    if (v == null) {
      return null;
    }
    if (!v.isNumber() || !Double.isFinite(v.doubleValue())) {
      throw new InvalidAdapterException(source + ": recipe field '" + field + "' must be a number");
    }
    return v.doubleValue();
  }

  /** Every setting of a run that contradicts an assumption of this recipe. */
  public List<RecipeMismatch> mismatches(
      String runSampler, int runSteps, double runGuidance, double runShift) {
    List<RecipeMismatch> out = new ArrayList<>();
    if (sampler != null && !sampler.equals(runSampler)) {
      out.add(new RecipeMismatch("sampler", sampler, runSampler));
    }
    if (steps != null && steps != runSteps) {
      out.add(new RecipeMismatch("steps", steps.toString(), Integer.toString(runSteps)));
    }
    if (guidance != null && guidance != runGuidance) {
      out.add(new RecipeMismatch("guidance", guidance.toString(), Double.toString(runGuidance)));
    }
    if (shift != null && shift != runShift) {
      out.add(new RecipeMismatch("shift", shift.toString(), Double.toString(runShift)));
    }
    return out;
  }

  private static String firstLine(Exception e) {
    String m = e.getMessage();
    return m == null ? e.getClass().getSimpleName() : m.lines().findFirst().orElse("");
  }
}

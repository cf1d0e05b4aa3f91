package dev.stepweave.core.card;

import com.fasterxml.jackson.annotation.JsonInclude;
import dev.stepweave.tensor.Precision;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * What produced a card's weights, and what those weights assume at serve time. The assumptions are
 * the recipe's teeth: a 4-step distilled card refuses a 50-step request (see {@link #mismatches}).
 *
 * @param method "base", "dmd2", "self_forcing", …
 * @param parents model ids this was distilled or trained from
 * @param provenance where the weights came from ("unknown" for an imported checkpoint)
 * @param assumesLoop the loop id the weights require, or null for any
 * @param assumesSampler the sampler the weights require ("unipc", "euler"), or null for any
 * @param assumesSteps the step count the weights require, or null for any
 * @param assumesPrecision the precision the weights require, or null for any
 * @param consistencyRequired the loosest rung this recipe's outputs are still valid under: a run
 *     held only to a looser one (see {@link ConsistencyRung#satisfies}) is refused
 * @param parentWeights for trained weights, the SHA-256 of the parent's weights file they started
 *     from (the parent named first in {@code parents}), else null
 * @param data for trained weights, the data they were trained on, else null
 * @param assumesGuidance the guidance scale the weights require, or null for any; at most 1 means
 *     no classifier-free guidance (a CFG-free distilled student), which any scale up to 1 runs
 */
public record RecipeSpec(
    String method,
    List<String> parents,
    String provenance,
    String assumesLoop,
    String assumesSampler,
    Integer assumesSteps,
    Precision assumesPrecision,
    ConsistencyRung consistencyRequired,
    @JsonInclude(JsonInclude.Include.NON_NULL) String parentWeights,
    @JsonInclude(JsonInclude.Include.NON_NULL) DataContract data,
    @JsonInclude(JsonInclude.Include.NON_NULL) Double assumesGuidance) {

  public RecipeSpec {
    Objects.requireNonNull(method, "recipe method");
    parents = List.copyOf(parents);
    Objects.requireNonNull(provenance, "recipe provenance");
    Objects.requireNonNull(consistencyRequired, "recipe consistency rung");
  }

  /** A recipe of weights that were not trained here: no parent weights or data recorded. */
  public RecipeSpec(
      String method,
      List<String> parents,
      String provenance,
      String assumesLoop,
      String assumesSampler,
      Integer assumesSteps,
      Precision assumesPrecision,
      ConsistencyRung consistencyRequired) {
    this(
        method,
        parents,
        provenance,
        assumesLoop,
        assumesSampler,
        assumesSteps,
        assumesPrecision,
        consistencyRequired,
        null,
        null,
        null);
  }

  /**
   * The data contract of trained weights: which dataset they saw, pinned by its content.
   *
   * @param datasetId what the data is ("shapes seed 1, 64x64x9, 1000 clips", a folder's name)
   * @param sha256 the SHA-256 of the data's content (a dataset folder's content hash, the shards'
   *     dataset hash, or the rendered shapes clips')
   */
  public record DataContract(String datasetId, String sha256) {
    public DataContract {
      Objects.requireNonNull(datasetId, "data contract dataset id");
      Objects.requireNonNull(sha256, "data contract sha256");
    }
  }

  /**
   * The recipe of an imported checkpoint whose history is not known: trained weights sample validly
   * under any run that keeps the output distribution (C3), distribution-altering caches included.
   */
  public static RecipeSpec base() {
    return new RecipeSpec("base", List.of(), "unknown", null, null, null, null, ConsistencyRung.C3);
  }

  /**
   * Every requested setting that contradicts an assumption of this recipe.
   *
   * @param runsAt the rung the run would be held to
   */
  public List<RecipeMismatch> mismatches(
      String sampler, int steps, double guidance, Precision precision, ConsistencyRung runsAt) {
    List<RecipeMismatch> out = new ArrayList<>();
    if (!runsAt.satisfies(consistencyRequired)) {
      out.add(new RecipeMismatch("consistency rung", consistencyRequired.name(), runsAt.name()));
    }
    if (assumesSampler != null && !assumesSampler.equals(sampler)) {
      out.add(new RecipeMismatch("sampler", assumesSampler, sampler));
    }
    if (assumesSteps != null && assumesSteps != steps) {
      out.add(new RecipeMismatch("steps", assumesSteps.toString(), Integer.toString(steps)));
    }
    if (assumesGuidance != null && !sameGuidance(assumesGuidance, guidance)) {
      out.add(
          new RecipeMismatch("guidance", assumesGuidance.toString(), Double.toString(guidance)));
    }
    if (assumesPrecision != null && assumesPrecision != precision) {
      out.add(new RecipeMismatch("precision", assumesPrecision.wireName(), precision.wireName()));
    }
    return out;
  }

  /** Scales up to 1 all run the conditional branch alone: one setting, "no guidance". */
  private static boolean sameGuidance(double assumed, double requested) {
    return assumed <= 1 ? requested <= 1 : assumed == requested;
  }

  /** One setting a request asks for that the recipe does not allow. */
  public record RecipeMismatch(String setting, String assumed, String requested) {
    @Override
    public String toString() {
      return setting + " " + requested + " (recipe assumes " + assumed + ")";
    }
  }
}

package dev.stepweave.models.wan;

import dev.stepweave.core.loop.policy.CfgPolicy;
import dev.stepweave.core.request.InvalidRequestException;
import dev.stepweave.core.request.Request;
import java.util.Map;

/**
 * The guidance policy a request asks for. The scale comes from the request's parameters (for the
 * second expert of a two-expert checkpoint, the denoise loop's {@code guidance_2}, else the same
 * scale, as the reference pipeline defaults it); the variant from the denoise loop's overrides:
 * {@code cfg = classic | zero_star | rescale | cond_only} (without it, {@link CfgPolicy#forScale}),
 * {@code cfg_batched = true|false} (one batched forward or two), {@code cfg_zero_init_steps},
 * {@code cfg_rescale} (phi).
 */
final class Guidance {
  static final String SECOND_SCALE = "guidance_2";

  private Guidance() {}

  /** The policy of the first (or only) expert. */
  static CfgPolicy policyFor(Request request) {
    return policyFor(request, 0);
  }

  /** The policy of expert {@code expert} (0 for the first). */
  static CfgPolicy policyFor(Request request, int expert) {
    Map<String, String> o = request.overridesFor(WanCards.DENOISE);
    double scale =
        expert == 0 || !o.containsKey(SECOND_SCALE)
            ? request.params().guidance()
            : number(o, SECOND_SCALE, request.params().guidance());
    if (!(scale >= 0) || Double.isInfinite(scale)) {
      throw new InvalidRequestException(
          SECOND_SCALE + " must be a finite number >= 0, got " + scale);
    }
    boolean batched = Boolean.parseBoolean(o.getOrDefault("cfg_batched", "false"));
    String variant = o.get("cfg");
    if (variant == null) {
      return CfgPolicy.forScale(scale, batched);
    }
    return switch (variant) {
      case "classic" -> new CfgPolicy.Classic(scale, batched);
      case "zero_star" ->
          new CfgPolicy.CfgZeroStar(scale, integer(o, "cfg_zero_init_steps", 0), batched);
      case "rescale" -> new CfgPolicy.Rescaled(scale, number(o, "cfg_rescale", 0.7), batched);
      case "cond_only" -> new CfgPolicy.CondOnly();
      default ->
          throw new InvalidRequestException(
              "unknown cfg variant '"
                  + variant
                  + "' (known: classic, zero_star, rescale, cond_only)");
    };
  }

  /** Whether any expert's policy runs the unconditional branch (then its embeddings are needed). */
  static boolean needsUncond(Request request, ExpertRouting routing) {
    for (int i = 0; i < routing.experts().size(); i++) {
      if (policyFor(request, i).needsUncond()) {
        return true;
      }
    }
    return false;
  }

  private static int integer(Map<String, String> o, String key, int fallback) {
    try {
      return o.containsKey(key) ? Integer.parseInt(o.get(key)) : fallback;
    } catch (NumberFormatException e) {
      throw new InvalidRequestException(key + " must be an integer, got '" + o.get(key) + "'");
    }
  }

  private static double number(Map<String, String> o, String key, double fallback) {
    try {
      return o.containsKey(key) ? Double.parseDouble(o.get(key)) : fallback;
    } catch (NumberFormatException e) {
      throw new InvalidRequestException(key + " must be a number, got '" + o.get(key) + "'");
    }
  }
}

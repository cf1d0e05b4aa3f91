package dev.stepweave.models.wan;

import dev.stepweave.core.loop.policy.CfgPolicy;
import dev.stepweave.core.request.InvalidRequestException;
import dev.stepweave.core.request.Request;
import java.util.Map;

/**
 * The guidance policy a request asks for. The scale comes from the request's parameters; the
 * variant from the denoise loop's overrides: {@code cfg = classic | zero_star | rescale |
 * cond_only} (without it, {@link CfgPolicy#forScale}), {@code cfg_batched = true|false} (one
 * batched forward or two), {@code cfg_zero_init_steps}, {@code cfg_rescale} (phi).
 */
final class Guidance {
  private Guidance() {}

  static CfgPolicy policyFor(Request request) {
    double scale = request.params().guidance();
    Map<String, String> o = request.overridesFor(WanCards.DENOISE);
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

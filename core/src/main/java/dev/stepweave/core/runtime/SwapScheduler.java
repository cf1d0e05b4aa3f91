package dev.stepweave.core.runtime;

import dev.stepweave.core.loop.SwappedComponents;
import dev.stepweave.core.loop.WorkPlan;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Orders one tick's plans while the model's components take turns on the device ({@link
 * SwappedComponents}), so that switching — seconds to tens of seconds — stays rare. A plan that
 * needs no swapped component, or the awake one, runs. A plan that needs a sleeping one is passed
 * over (its request is asked again next tick) until no plan of the tick needs the awake component,
 * or until the plan passed over longest has waited {@code switchDeferral} times the predicted
 * switch cost; then the plans of that plan's component run too, after the awake one's, so the tick
 * switches once. Without swapped components every plan runs, in order.
 */
final class SwapScheduler {
  private final double switchDeferral;
  // Since when each request's plans have been passed over, by request id; only requests passed
  // over in the last tick.
  private Map<String, Instant> passedOver = new HashMap<>();

  /**
   * @param switchDeferral how long a plan may be passed over, in multiples of the switch cost
   */
  SwapScheduler(double switchDeferral) {
    this.switchDeferral = switchDeferral;
  }

  /**
   * The plans to run this tick, as indices into {@code plans}, in the order they run: first those
   * that need no switch, then those that need the component switched to, if any.
   *
   * @param requestIds the request of each plan
   */
  List<Integer> order(
      List<String> requestIds,
      List<WorkPlan> plans,
      Optional<SwappedComponents> swapped,
      Instant now) {
    List<Integer> run = new ArrayList<>();
    if (swapped.isEmpty()) {
      passedOver.clear();
      for (int i = 0; i < plans.size(); i++) {
        run.add(i);
      }
      return run;
    }
    Optional<String> awake = swapped.get().awake();
    boolean awakeNeeded = false;
    Map<String, List<Integer>> waiting = new LinkedHashMap<>();
    Map<String, Instant> since = new HashMap<>();
    String longest = null; // the component the plan passed over longest needs
    Instant longestSince = null;
    for (int i = 0; i < plans.size(); i++) {
      Optional<String> needs = plans.get(i).call().awakeComponent();
      if (needs.isEmpty() || needs.equals(awake)) {
        awakeNeeded |= needs.isPresent();
        run.add(i);
        continue;
      }
      waiting.computeIfAbsent(needs.get(), c -> new ArrayList<>()).add(i);
      Instant from = passedOver.getOrDefault(requestIds.get(i), now);
      since.put(requestIds.get(i), from);
      if (longestSince == null || from.isBefore(longestSince)) {
        longestSince = from;
        longest = needs.get();
      }
    }
    if (longest != null
        && (!awakeNeeded || overdue(longestSince, now, swapped.get().switchMillis()))) {
      for (int i : waiting.get(longest)) {
        run.add(i);
        since.remove(requestIds.get(i));
      }
    }
    passedOver = since;
    return run;
  }

  /**
   * Whether a plan passed over since {@code from} has waited its bound; at once for a free switch.
   */
  private boolean overdue(Instant from, Instant now, double switchMillis) {
    double waitedMillis = Duration.between(from, now).toNanos() / 1e6;
    return switchMillis <= 0 || waitedMillis >= switchDeferral * switchMillis;
  }
}

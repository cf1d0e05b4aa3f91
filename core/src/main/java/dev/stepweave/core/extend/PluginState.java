package dev.stepweave.core.extend;

import dev.stepweave.tensor.Tensor;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.UnaryOperator;

/**
 * Every plugin's state of one request, keyed by plugin and CFG branch ({@code "dbcache/cond"}). It
 * lives in the loop state — never in a component, a policy or a static — so concurrent and batched
 * requests cannot see each other's cached residuals, and it serialises with the rest of the state.
 */
public final class PluginState {
  private final Map<String, PluginSlot> slots = new TreeMap<>();

  /** The slot of a plugin for one branch, created empty on first use. */
  public PluginSlot slot(String pluginId, String branch) {
    if (pluginId.contains("/")
        || pluginId.contains(".")
        || branch.contains("/")
        || branch.contains(".")) {
      throw new IllegalArgumentException("bad slot name " + pluginId + "/" + branch);
    }
    return slots.computeIfAbsent(pluginId + "/" + branch, k -> new PluginSlot());
  }

  /**
   * A copy to work on: a step writes its slots there and returns it as the loop state's next plugin
   * state, so a step that throws (and is re-run alone) leaves the state as it was. Tensors are
   * shared, never written in place.
   */
  public PluginState copy() {
    PluginState c = new PluginState();
    slots.forEach((k, slot) -> c.slots.put(k, slot.copy()));
    return c;
  }

  public boolean isEmpty() {
    return slots.isEmpty();
  }

  /**
   * Counters summed over branches, named {@code plugin.counter} (numbers whose name starts with
   * {@code count_}, without that prefix).
   */
  public Map<String, Long> report() {
    Map<String, Long> out = new TreeMap<>();
    slots.forEach(
        (key, slot) -> {
          String plugin = key.substring(0, key.indexOf('/'));
          slot.numbers()
              .forEach(
                  (name, v) -> {
                    if (name.startsWith("count_")) {
                      out.merge(plugin + "." + name.substring(6), v.longValue(), Long::sum);
                    }
                  });
        });
    return out;
  }

  /** The tensors, named {@code plugin/branch.tensor}, each passed through {@code toHost}. */
  public Map<String, Tensor> tensors(UnaryOperator<Tensor> toHost) {
    Map<String, Tensor> out = new HashMap<>();
    slots.forEach((k, s) -> s.tensors().forEach((n, t) -> out.put(k + "." + n, toHost.apply(t))));
    return out;
  }

  /** The numbers, named {@code plugin/branch.number}. */
  public Map<String, Double> numbers() {
    Map<String, Double> out = new TreeMap<>();
    slots.forEach((k, s) -> s.numbers().forEach((n, v) -> out.put(k + "." + n, v)));
    return out;
  }

  /** Rebuilds a state from {@link #tensors} and {@link #numbers}. */
  public static PluginState restore(
      Map<String, Tensor> tensors, Map<String, Double> numbers, UnaryOperator<Tensor> toDevice) {
    PluginState s = new PluginState();
    tensors.forEach((k, t) -> s.slotOf(k).put(nameOf(k), toDevice.apply(t)));
    numbers.forEach((k, v) -> s.slotOf(k).put(nameOf(k), v));
    return s;
  }

  private PluginSlot slotOf(String qualified) {
    return slots.computeIfAbsent(
        qualified.substring(0, qualified.indexOf('.')), k -> new PluginSlot());
  }

  private static String nameOf(String qualified) {
    return qualified.substring(qualified.indexOf('.') + 1);
  }
}

package dev.stepweave.core.extend;

import dev.stepweave.tensor.Tensor;
import java.util.Map;
import java.util.TreeMap;

/**
 * One plugin's state for one request and one CFG branch: named tensors (cached residuals) and named
 * numbers (counters, the step they were computed at). Only that request's step calls write it.
 */
public final class PluginSlot {
  private final Map<String, Tensor> tensors = new TreeMap<>();
  private final Map<String, Double> numbers = new TreeMap<>();

  public Tensor tensor(String name) {
    return tensors.get(name);
  }

  public void put(String name, Tensor value) {
    tensors.put(name, value);
  }

  public double number(String name) {
    return numbers.getOrDefault(name, 0.0);
  }

  public void put(String name, double value) {
    numbers.put(name, value);
  }

  public void add(String name, double delta) {
    numbers.merge(name, delta, Double::sum);
  }

  PluginSlot copy() {
    PluginSlot c = new PluginSlot();
    c.tensors.putAll(tensors);
    c.numbers.putAll(numbers);
    return c;
  }

  Map<String, Tensor> tensors() {
    return tensors;
  }

  Map<String, Double> numbers() {
    return numbers;
  }
}

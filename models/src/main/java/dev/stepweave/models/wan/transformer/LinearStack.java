package dev.stepweave.models.wan.transformer;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;
import java.util.ArrayList;
import java.util.List;

/**
 * Linear layers whose weights are stored stacked in one tensor {@code [G, out, in]} (biases {@code
 * [G, out]}), so a backend multiplies those of one input in one call ({@link
 * Backend#linearStacked}): an attention's query, key and value projections. Each layer is still a
 * {@link Linear} of its checkpoint name whose weight is a view of the stack, so adapters find it
 * and an update of it is an update of the stack.
 */
record LinearStack(List<Linear> layers, Tensor weight, Tensor bias) {

  /** Takes {@code <name>.weight [out, in]} and {@code <name>.bias [out]} of each name, stacked. */
  static LinearStack take(Weights weights, int in, int out, String... names) {
    List<String> weightNames = new ArrayList<>(), biasNames = new ArrayList<>();
    for (String name : names) {
      weightNames.add(name + ".weight");
      biasNames.add(name + ".bias");
    }
    Tensor weight = weights.takeStacked(weightNames, out, in);
    Tensor bias = weights.takeStacked(biasNames, out);
    List<Linear> layers = new ArrayList<>();
    for (int i = 0; i < names.length; i++) {
      layers.add(new Linear(weights.fullName(names[i]), weight.select(0, i), bias.select(0, i)));
    }
    return new LinearStack(List.copyOf(layers), weight, bias);
  }

  Linear layer(int i) {
    return layers.get(i);
  }

  /**
   * Layers {@code from} to {@code to - 1} applied to {@code x}, in order: one stacked call, or
   * layer by layer where adapters touch one of them (each row's updates are per layer).
   */
  List<Tensor> apply(Backend backend, Tensor x, AdapterRows adapters, int from, int to) {
    List<Linear> range = layers.subList(from, to);
    if (range.stream().anyMatch(l -> adapters.touches(l.name()))) {
      return range.stream().map(l -> l.apply(backend, x, adapters)).toList();
    }
    return backend.linearStacked(x, weight.slice(0, from, to), bias.slice(0, from, to));
  }
}

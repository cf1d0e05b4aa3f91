package dev.stepweave.models.wan.transformer;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.LowRank;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The adapters of every batch row of one transformer call, each with its strength: row {@code b}'s
 * adapted layers compute {@code W·x + b + Σᵢ sᵢ·(αᵢ/rᵢ)·Bᵢ(Aᵢ·x) + Σᵢ sᵢ·biasᵢ} over its own
 * adapters, so rows with different adapters share one call ({@link Backend#addLowRank}). The shared
 * weights are never changed, and a row without adapters computes exactly what it computes alone.
 */
public final class AdapterRows {
  /** No row has adapters: every layer runs its plain weights. */
  public static final AdapterRows NONE = new AdapterRows(List.of());

  /** One adapter of a row at a strength. */
  public record Applied(LayerAdapter adapter, float strength) {}

  private final List<List<Applied>> rows;
  private final Set<String> layers;

  private AdapterRows(List<List<Applied>> rows) {
    this.rows = rows.stream().map(List::copyOf).toList();
    Set<String> touched = new HashSet<>();
    for (List<Applied> row : this.rows) {
      for (Applied a : row) {
        touched.addAll(a.adapter().layers().keySet());
      }
    }
    this.layers = Set.copyOf(touched);
  }

  /**
   * The adapters of each batch row, in stacking order; {@link #NONE} when no row has any.
   *
   * @param rows one list per batch row (empty for a row without adapters)
   */
  public static AdapterRows of(List<List<Applied>> rows) {
    return rows.stream().allMatch(List::isEmpty) ? NONE : new AdapterRows(rows);
  }

  public boolean isEmpty() {
    return layers.isEmpty();
  }

  /** Whether any row adapts layer {@code name}. */
  boolean touches(String name) {
    return layers.contains(name);
  }

  /**
   * What a recording of a call with these adapters depends on: each row's adapters (their loads)
   * and strengths; "" for none.
   */
  public String composition() {
    if (isEmpty()) {
      return "";
    }
    return rows.stream()
        .map(
            row ->
                row.stream()
                    .map(a -> a.adapter().identity() + "*" + a.strength())
                    .collect(Collectors.joining("+")))
        .collect(Collectors.joining("|"));
  }

  /**
   * Layer {@code name}'s {@code linear(x, weight, bias)} plus each row's updates of it, then GELU
   * (tanh) when {@code geluTanh} — in one backend call ({@link Backend#linearLowRank}) unless a row
   * has a bias delta, which must land before the activation.
   *
   * @param x the layer's input, {@code [B, in]} or {@code [B, L, in]}
   */
  Tensor apply(
      Backend backend, String name, Tensor x, Tensor weight, Tensor bias, boolean geluTanh) {
    if (x.dim(0) != rows.size()) {
      throw new IllegalArgumentException(
          "layer " + name + " runs " + x.dim(0) + " rows with adapters for " + rows.size());
    }
    boolean flat = x.rank() == 2;
    Tensor x3 = flat ? x.unsqueeze(1) : x;
    List<List<LowRank>> updates = new ArrayList<>(rows.size());
    boolean anyBias = false;
    for (List<Applied> row : rows) {
      List<LowRank> own = new ArrayList<>();
      for (Applied a : row) {
        LayerUpdate u = a.adapter().layers().get(name);
        if (u != null) {
          own.add(new LowRank(u.down(), u.up(), a.strength() * u.alphaScale()));
          anyBias |= u.bias() != null;
        }
      }
      updates.add(own);
    }
    Tensor out = backend.linearLowRank(x3, weight, bias, geluTanh && !anyBias, updates);
    if (anyBias) {
      out = backend.add(out, biasRows(backend, name, out.dim(2)));
      out = geluTanh ? backend.gelu(out, true) : out;
    }
    return flat ? out.reshape(x.dim(0), out.dim(2)) : out;
  }

  /** {@code [B, 1, out]}: each row's strength-weighted bias deltas of layer {@code name}. */
  private Tensor biasRows(Backend backend, String name, int out) {
    List<Tensor> perRow = new ArrayList<>(rows.size());
    for (List<Applied> row : rows) {
      Tensor sum = null;
      for (Applied a : row) {
        LayerUpdate u = a.adapter().layers().get(name);
        if (u != null && u.bias() != null) {
          Tensor scaled = backend.affine(u.bias(), a.strength(), 0f);
          sum = sum == null ? scaled : backend.add(sum, scaled);
        }
      }
      perRow.add(
          (sum == null ? backend.zeros(backend.activationDType(), out) : sum).reshape(1, 1, out));
    }
    return backend.concat(perRow, 0);
  }
}

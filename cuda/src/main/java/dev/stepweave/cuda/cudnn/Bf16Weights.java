package dev.stepweave.cuda.cudnn;

import dev.stepweave.cuda.memory.DeviceTensors;
import dev.stepweave.cuda.memory.MemoryScope;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Storage;
import dev.stepweave.tensor.Tensor;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;

/**
 * Contiguous BF16 copies of weights, optionally with their dims permuted (a channels-last filter),
 * made once per weight view and kept while the weight's storage is reachable, so a model loaded in
 * F32 is not converted on every call. Keys are the storage's identity ({@link Storage} keeps {@code
 * Object}'s equality; the map holds it weakly) and the view; only device tensors are cached. A
 * weight updated in place (an optimiser's step, a restore: {@link #overwritten}) keeps its copies,
 * which are refreshed on their next use. The copies are allocated outside any open {@link
 * MemoryScope} (a scope would free them under the cache): a copy of a component's weight joins that
 * component's pool (accounted, asleep and freed with it); any other copy goes back to the allocator
 * once the weight, and with it the entry, is unreachable.
 */
final class Bf16Weights {
  private record View(long offset, List<Integer> shape, List<Long> strides, DType dtype) {
    static View of(Tensor t) {
      return new View(
          t.offset(),
          Arrays.stream(t.shape()).boxed().toList(),
          Arrays.stream(t.strides()).boxed().toList(),
          t.dtype());
    }
  }

  private record Form(View view, List<Integer> order) {}

  /** A copy, and whether its weight has changed since it was made. */
  private static final class Copy {
    final Tensor tensor;
    boolean stale;

    Copy(Tensor tensor) {
      this.tensor = tensor;
    }
  }

  private final DeviceTensors tensors;
  private final Map<Storage, Map<Form, Copy>> copies = new WeakHashMap<>();

  Bf16Weights(DeviceTensors tensors) {
    this.tensors = tensors;
  }

  /**
   * {@code w.permute(order)} ({@code w} for no order) as a contiguous BF16 device tensor: {@code w}
   * itself when it already is one, else the cached copy (made now on first use). A host tensor is
   * uploaded and converted on every call; {@link #release} gives that copy back.
   */
  Tensor get(Tensor w, int... order) {
    Tensor here = tensors.onDevice(w);
    Tensor view = order.length == 0 ? here : here.permute(order);
    if (view.dtype() == DType.BF16 && view.isContiguous()) {
      return view;
    }
    if (here != w) {
      Tensor copy = tensors.convert(view, DType.BF16);
      tensors.releaseDerived(here, w);
      return copy;
    }
    Form form = new Form(View.of(w), Arrays.stream(order).boxed().toList());
    Copy copy =
        copies
            .computeIfAbsent(w.storage(), s -> new HashMap<>())
            .computeIfAbsent(
                form,
                f -> {
                  Tensor made = tensors.emptyBeside(w, DType.BF16, view.shape());
                  tensors.copy(view, made);
                  return new Copy(made);
                });
    if (copy.stale) {
      tensors.copy(view, copy.tensor);
      copy.stale = false;
    }
    return copy.tensor;
  }

  /** Something wrote into {@code storage} in place: its copies are refreshed on their next use. */
  void overwritten(Storage storage) {
    Map<Form, Copy> forms = copies.get(storage);
    if (forms != null) {
      forms.values().forEach(c -> c.stale = true);
    }
  }

  /** Gives back what {@link #get} returned for {@code w} when it was made for one call alone. */
  void release(Tensor copy, Tensor w) {
    if (!tensors.isHere(w)) {
      tensors.releaseDerived(copy, w);
    }
  }
}

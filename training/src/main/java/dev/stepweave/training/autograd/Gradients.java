package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Storage;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Gradients kept per storage, not per tensor: a view (reshape, permute, slice, select, expand) is a
 * different {@link Tensor} over the same storage, so addressing gradients by storage element makes
 * every view differentiable without recording it — a view's gradient is added into, or read from,
 * its storage's buffer through the view's own strides and offset.
 *
 * <p>A buffer is an F32 tensor on the device of the storage it belongs to, made and added into by
 * that device's backend ({@link Backend#addInto}): the forward's backend for the tensors it
 * computed, the host's for host tensors (a checkpoint's tensors before their upload; the same
 * backend when the forward runs on the CPU). A gradient computed on the other side is moved first.
 */
public final class Gradients {
  private final Backend device;
  private final Backend host;
  private final Map<Storage, Tensor> buffers = new IdentityHashMap<>();
  // The buffers' own storages, so adopting a gradient asks in one lookup whether it is one already.
  private final Set<Storage> bufferStorages = Collections.newSetFromMap(new IdentityHashMap<>());
  private final Map<Storage, DType> dtypes = new IdentityHashMap<>();

  /** Gradients of tensors computed by {@code device} or, on the host, by {@code host}. */
  Gradients(Backend device, Backend host) {
    this.device = device;
    this.host = host;
  }

  /** The backend that owns {@code t}'s memory. */
  private Backend backendOf(Tensor t) {
    return Host.backendFor(device, host, t);
  }

  /**
   * Adds {@code grad} (of {@code target}'s shape, as a {@link Contribution} checks) into {@code
   * target}'s storage buffer. Dimensions that {@code target} broadcasts (stride 0) are summed
   * first, which is the broadcast's backward.
   */
  void accumulate(Tensor target, Tensor grad) {
    Backend owner = backendOf(target);
    Tensor g = onDeviceOf(owner, target, grad);
    int[] repeated = repeatedDims(target);
    Tensor view = target;
    if (repeated.length > 0) {
      g = sumOver(owner, g, repeated);
      for (int d : repeated) {
        view = view.slice(d, 0, 1);
      }
    }
    dtypes.putIfAbsent(target.storage(), target.dtype());
    Tensor buffer = buffers.get(target.storage());
    if (buffer == null) {
      int elements = (int) (target.storage().byteSize() / target.dtype().byteSize());
      if (adoptable(g, view, elements)) {
        // The first gradient of the whole storage, in a tensor of its own: it becomes the buffer,
        // without a zeroed buffer and a copy.
        keep(target, g.reshape(elements));
        return;
      }
      buffer = owner.zeros(DType.F32, elements);
      keep(target, buffer);
      if (view.isContiguous()) {
        // The first gradient into a fresh buffer, each element once: 0 + g is g, so a copy does
        // the add's work in one pass instead of three.
        owner.copyInto(over(buffer, view), g);
        return;
      }
    }
    owner.addInto(over(buffer, view), g);
  }

  /**
   * Whether {@code g} can be a storage's whole buffer: dense F32 over all of its own memory, that
   * memory no other buffer's (a rule may hand one gradient to two inputs), and {@code view} the
   * whole target storage in order. A rule's gradients are its own or its output's, which is done
   * with, so nothing else writes into them or reads them after.
   */
  private boolean adoptable(Tensor g, Tensor view, int elements) {
    if (g.dtype() != DType.F32
        || !g.isContiguous()
        || g.offset() != 0
        || g.numel() != elements
        || g.storage().byteSize() != (long) elements * Float.BYTES
        || !view.isContiguous()
        || view.offset() != 0
        || view.numel() != elements) {
      return false;
    }
    return !bufferStorages.contains(g.storage());
  }

  private void keep(Tensor target, Tensor buffer) {
    buffers.put(target.storage(), buffer);
    bufferStorages.add(buffer.storage());
  }

  /** {@code grad} on the device of {@code target}. */
  private Tensor onDeviceOf(Backend owner, Tensor target, Tensor grad) {
    if (grad.device().equals(target.device())) {
      return grad;
    }
    return target.device().kind() == Device.Kind.CPU
        ? device.download(grad)
        : owner.upload(grad, DType.F32);
  }

  /** The dimensions along which {@code t} repeats one element (stride 0, size above 1). */
  private static int[] repeatedDims(Tensor t) {
    return java.util.stream.IntStream.range(0, t.rank())
        .filter(d -> t.stride(d) == 0 && t.dim(d) > 1)
        .toArray();
  }

  /** {@code g} summed over {@code dims} (ascending), each kept with size 1. */
  private static Tensor sumOver(Backend b, Tensor g, int[] dims) {
    int rank = g.rank();
    int[] shape = g.shape().clone();
    for (int d : dims) {
      shape[d] = 1;
    }
    int first = dims[0], last = dims[dims.length - 1];
    if (last - first + 1 == dims.length && last < rank - 1) {
      // Consecutive and not last: g is [outer, rows, inner], a sum over its middle.
      int outer = (int) Tensor.numel(Arrays.copyOfRange(g.shape(), 0, first));
      int rows = (int) Tensor.numel(Arrays.copyOfRange(g.shape(), first, last + 1));
      int inner = (int) Tensor.numel(Arrays.copyOfRange(g.shape(), last + 1, rank));
      return MiddleSums.of(b, g, outer, rows, inner).reshape(shape);
    }
    int[] order = new int[rank];
    int[] kept = new int[rank - dims.length];
    int k = 0;
    boolean[] summed = new boolean[rank];
    for (int d : dims) {
      summed[d] = true;
    }
    for (int d = 0; d < rank; d++) {
      if (!summed[d]) {
        kept[k] = g.dim(d);
        order[k++] = d;
      }
    }
    int length = 1;
    for (int d : dims) {
      order[k++] = d;
      length *= g.dim(d);
    }
    int[] rows = Arrays.copyOf(kept, kept.length + 1);
    rows[kept.length] = length;
    Tensor sums = b.sumLastDim(b.contiguous(g.permute(order)).reshape(rows));
    return sums.reshape(shape);
  }

  /** {@code view}'s elements in {@code buffer} (same indexing as the view's own storage). */
  private static Tensor over(Tensor buffer, Tensor view) {
    return new Tensor(buffer.storage(), DType.F32, view.shape(), view.strides(), view.offset());
  }

  /**
   * The gradient of {@code t}'s elements as a contiguous F32 tensor of its shape on its device, or
   * null when none reached it.
   */
  Tensor gather(Tensor t) {
    Tensor buffer = buffers.get(t.storage());
    return buffer == null ? null : backendOf(t).contiguous(over(buffer, t));
  }

  void release(Tensor t) {
    Tensor buffer = buffers.remove(t.storage());
    if (buffer != null) {
      bufferStorages.remove(buffer.storage());
    }
  }

  /** The buffers held now: what a backward step must keep. */
  List<Tensor> held() {
    return new ArrayList<>(buffers.values());
  }

  /** Every gradient held, each addressed to the whole of its storage. */
  List<Contribution> asContributions() {
    List<Contribution> out = new ArrayList<>(buffers.size());
    buffers.forEach(
        (storage, g) ->
            out.add(
                new Contribution(
                    new Tensor(storage, dtypes.get(storage), g.shape(), new long[] {1}, 0), g)));
    return out;
  }

  /** Whether any gradient reached {@code t}'s storage. */
  public boolean reached(Tensor t) {
    return buffers.containsKey(t.storage());
  }

  /**
   * The gradient of {@code t} (a tensor the tape tracked, or a view of one) as a contiguous F32
   * tensor of its shape where {@code t} lives — what an optimiser beside {@code t} reads, with no
   * download; zeros there when nothing the output depends on reads it. On a device it may be a view
   * of this step's buffer: read it, do not write into it.
   */
  public Tensor at(Tensor t) {
    if (t.device().kind() == Device.Kind.CPU) {
      return of(t);
    }
    Tensor g = gather(t);
    return g != null ? g : backendOf(t).zeros(DType.F32, t.shape());
  }

  /**
   * The gradient of {@code t} (a tensor the tape tracked, or a view of one) as a CPU F32 tensor of
   * its shape; zeros when nothing the output depends on reads it.
   */
  public Tensor of(Tensor t) {
    Tensor g = gather(t);
    if (g == null) {
      return Tensor.zeros(DType.F32, t.shape());
    }
    // A copy: the caller may scale or add into it, and the buffer may still be read.
    return Tensor.of(Host.values(device, g), t.shape());
  }
}

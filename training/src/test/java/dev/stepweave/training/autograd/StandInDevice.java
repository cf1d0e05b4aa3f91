package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Storage;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;

/**
 * A device backend without a device, for the training plane's device path in CI: it computes with
 * the CPU backend's kernels, but every tensor it makes is labelled {@code cuda:0}, so any host
 * access of one (an element read, {@code toFloatArray}, a host kernel given it) fails as it would
 * on a GPU, and what crosses between host and device must go through {@link #upload} and {@link
 * #download}. Its values are the CPU's bit for bit, so a training step over it must match one over
 * the CPU exactly.
 *
 * <p>Its {@link #stepMemory} keeps CUDA's release discipline, except that memory declared dead is
 * overwritten with NaN instead of reused: a caller still reading it changes results, which the
 * tests over this device compare bit for bit with the CPU's.
 */
public final class StandInDevice implements Backend {
  private static final Device DEVICE = Device.cuda(0);
  private final CpuBackend cpu = new CpuBackend();
  // The memory the current operation reads, by address: a result elsewhere is memory it allocated.
  private final Set<Long> arguments = new HashSet<>();
  // What the open steps of a step memory allocated, innermost last.
  private final Deque<List<Storage>> steps = new ArrayDeque<>();
  private long poisonedBytes;
  private final List<IllegalStateException> transfers = new ArrayList<>();

  @Override
  public Device device() {
    return DEVICE;
  }

  @Override
  public String name() {
    return "stand-in cuda:0 (the CPU's kernels)";
  }

  /** {@code t} as the CPU kernels read it: a host view of the same memory (host tensors as is). */
  private Tensor host(Tensor t) {
    if (t != null) {
      arguments.add(t.storage().segment().address());
    }
    if (t == null || t.device().kind() == Device.Kind.CPU) {
      return t;
    }
    return new Tensor(
        new Storage(t.storage().segment(), Device.CPU),
        t.dtype(),
        t.shape(),
        t.strides(),
        t.offset());
  }

  /**
   * A CPU kernel's result as this device's tensor; a result over an input's own memory (a kernel
   * that returned its input) is that input's storage again, as a device backend would return it.
   */
  private Tensor device(Tensor out, Tensor... inputs) {
    for (Tensor in : inputs) {
      if (in != null && in.storage().segment() == out.storage().segment()) {
        arguments.clear();
        return new Tensor(in.storage(), out.dtype(), out.shape(), out.strides(), out.offset());
      }
    }
    Storage storage = new Storage(out.storage().segment(), DEVICE);
    boolean made = !arguments.contains(storage.segment().address());
    arguments.clear();
    if (made && !steps.isEmpty() && storage.byteSize() > 0) {
      steps.peek().add(storage);
    }
    return new Tensor(storage, out.dtype(), out.shape(), out.strides(), out.offset());
  }

  /**
   * As CUDA's allocator holds a state's memory: after each step, what the step allocated or an
   * earlier step kept dies unless a survivor is over it — and is overwritten with NaN here.
   */
  @Override
  public StepMemory stepMemory() {
    return new StepMemory() {
      private List<Storage> kept = new ArrayList<>();

      @Override
      public void step(Runnable body, Supplier<? extends Collection<Tensor>> survivors) {
        steps.push(new ArrayList<>());
        List<Storage> made;
        try {
          body.run();
        } catch (RuntimeException | Error e) {
          List<Storage> failed = steps.pop(); // a failed step releases nothing
          if (!steps.isEmpty()) {
            steps.peek().addAll(failed);
          }
          throw e;
        }
        made = steps.pop();
        Set<Long> keep = new HashSet<>();
        for (Tensor t : survivors.get()) {
          keep.add(t.storage().segment().address());
        }
        List<Storage> next = new ArrayList<>();
        for (List<Storage> from : List.of(kept, made)) {
          for (Storage candidate : from) {
            if (keep.contains(candidate.segment().address())) {
              next.add(candidate);
            } else {
              candidate.segment().fill((byte) 0xFF); // NaN in F32 and BF16
              poisonedBytes += candidate.byteSize();
            }
          }
        }
        kept = next;
      }

      @Override
      public void end() {
        if (!steps.isEmpty()) {
          steps.peek().addAll(kept);
        }
        kept = new ArrayList<>();
      }
    };
  }

  /** Bytes a step memory declared dead (and overwrote) so far. */
  public long poisonedBytes() {
    return poisonedBytes;
  }

  @Override
  public Tensor zeros(DType dtype, int... shape) {
    return device(cpu.zeros(dtype, shape));
  }

  @Override
  public Tensor upload(Tensor t, DType dtype) {
    if (t.device().kind() == Device.Kind.CPU) {
      transfers.add(new IllegalStateException("an upload of " + t));
    }
    return device(cpu.upload(host(t), dtype));
  }

  @Override
  public Tensor download(Tensor t) {
    transfers.add(new IllegalStateException("a download of " + t));
    return cpu.upload(host(t), t.dtype().isFloating() ? DType.F32 : t.dtype());
  }

  /**
   * Every upload of a host tensor and every download since the last call, each as an exception
   * whose stack says who made it (a device graph could record none of them), and forgets them.
   */
  public List<IllegalStateException> transfers() {
    List<IllegalStateException> out = List.copyOf(transfers);
    transfers.clear();
    return out;
  }

  @Override
  public Tensor contiguous(Tensor t) {
    return device(cpu.contiguous(host(t)), t);
  }

  @Override
  public Tensor linear(Tensor x, Tensor w, Tensor bias) {
    return device(cpu.linear(host(x), host(w), host(bias)));
  }

  @Override
  public Tensor matmul(Tensor a, Tensor b) {
    return device(cpu.matmul(host(a), host(b)));
  }

  @Override
  public Tensor attention(Tensor q, Tensor k, Tensor v, Tensor bias, float scale) {
    return device(cpu.attention(host(q), host(k), host(v), host(bias), scale));
  }

  @Override
  public AttentionGradients attentionBackward(
      AttentionForward forward, Tensor gradOut, boolean biasGradient) {
    AttentionGradients g =
        cpu.attentionBackward(
            new AttentionForward(
                host(forward.q()),
                host(forward.k()),
                host(forward.v()),
                host(forward.bias()),
                forward.scale(),
                host(forward.out())),
            host(gradOut),
            biasGradient);
    return new AttentionGradients(
        device(g.q()), device(g.k()), device(g.v()), g.bias() == null ? null : device(g.bias()));
  }

  @Override
  public Tensor conv3d(Tensor x, Tensor w, Tensor bias, int[] stride, int[] padding) {
    return device(cpu.conv3d(host(x), host(w), host(bias), stride, padding));
  }

  @Override
  public Tensor layerNorm(Tensor x, Tensor weight, Tensor bias, float eps) {
    return device(cpu.layerNorm(host(x), host(weight), host(bias), eps));
  }

  @Override
  public Tensor rmsNorm(Tensor x, Tensor weight, float eps) {
    return device(cpu.rmsNorm(host(x), host(weight), eps));
  }

  @Override
  public Tensor l2Normalize(Tensor x, int dim, float eps) {
    return device(cpu.l2Normalize(host(x), dim, eps));
  }

  @Override
  public Tensor softmax(Tensor x) {
    return device(cpu.softmax(host(x)));
  }

  @Override
  public Tensor gelu(Tensor x, boolean tanhApproximation) {
    return device(cpu.gelu(host(x), tanhApproximation));
  }

  @Override
  public Tensor silu(Tensor x) {
    return device(cpu.silu(host(x)));
  }

  @Override
  public Tensor unary(Tensor x, UnaryOp op) {
    return device(cpu.unary(host(x), op));
  }

  @Override
  public Tensor binary(Tensor a, Tensor b, BinaryOp op) {
    return device(cpu.binary(host(a), host(b), op));
  }

  @Override
  public Tensor affine(Tensor x, float scale, float shift) {
    return device(cpu.affine(host(x), scale, shift));
  }

  @Override
  public Tensor clamp(Tensor x, float min, float max) {
    return device(cpu.clamp(host(x), min, max));
  }

  @Override
  public Tensor rope(Tensor x, Tensor cos, Tensor sin) {
    return device(cpu.rope(host(x), host(cos), host(sin)));
  }

  @Override
  public Tensor concat(List<Tensor> parts, int dim) {
    return device(cpu.concat(parts.stream().map(this::host).toList(), dim));
  }

  @Override
  public Tensor pad(Tensor x, int[] pads, float value) {
    return device(cpu.pad(host(x), pads, value), x);
  }

  @Override
  public Tensor upsampleNearest2d(Tensor x, int scaleH, int scaleW) {
    return device(cpu.upsampleNearest2d(host(x), scaleH, scaleW));
  }

  @Override
  public Tensor embedding(Tensor table, Tensor ids) {
    return device(cpu.embedding(host(table), host(ids)));
  }

  @Override
  public Tensor sumLastDim(Tensor x) {
    return device(cpu.sumLastDim(host(x)));
  }

  /** As CUDA's: the parameter and moments must be this device's; the gradient may be the host's. */
  @Override
  public void adamw(Tensor parameter, Tensor gradient, Tensor m, Tensor v, AdamWStep step) {
    for (Tensor t : new Tensor[] {parameter, m, v}) {
      if (t.device().kind() == Device.Kind.CPU) {
        throw new IllegalArgumentException("AdamW: " + t + " is not on " + DEVICE);
      }
    }
    cpu.adamw(host(parameter), host(gradient), host(m), host(v), step);
  }

  /** As CUDA's: the target must be this device's; the value may come from either side. */
  @Override
  public void addInto(Tensor target, Tensor value) {
    if (target.device().kind() == Device.Kind.CPU) {
      throw new IllegalArgumentException("addInto: target " + target + " is not on " + DEVICE);
    }
    cpu.addInto(host(target), host(value));
  }

  @Override
  public void copyInto(Tensor target, Tensor value) {
    if (target.device().kind() == Device.Kind.CPU) {
      throw new IllegalArgumentException("copyInto: target " + target + " is not on " + DEVICE);
    }
    cpu.copyInto(host(target), host(value));
  }
}

package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Storage;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.function.Predicate;

/**
 * The record of one differentiable forward: the tensors whose gradients are wanted (the leaves: a
 * model's trainable parameters, an input), and, in execution order, every operation that read a
 * tracked tensor. Operations on untracked tensors only (constant tables, the timestep features) are
 * not recorded, so they cost nothing in the backward.
 */
public final class Tape {
  private final List<Node> nodes = new ArrayList<>();
  private final Set<Storage> tracked = Collections.newSetFromMap(new IdentityHashMap<>());
  private final Set<Storage> read = Collections.newSetFromMap(new IdentityHashMap<>());
  private Backend backend;
  private Backend host;

  /** A new, empty tape that tracks every tensor this one tracks now. */
  Tape child() {
    Tape t = new Tape();
    t.tracked.addAll(tracked);
    t.backend = backend;
    t.host = host;
    return t;
  }

  /** A new, empty tape that tracks those of {@code inputs} this one tracks (a fused node's). */
  Tape childTracking(Tensor... inputs) {
    Tape t = new Tape();
    for (Tensor in : inputs) {
      if (tracks(in)) {
        t.tracked.add(in.storage());
      }
    }
    t.backend = backend;
    t.host = host;
    return t;
  }

  /**
   * Notes the backends a recording onto this tape computes with: the forward's, which keeps the
   * gradients of what it computed, and the host's, which keeps those of host tensors.
   *
   * @throws IllegalStateException when an earlier recording used another backend
   */
  void recordsOn(Backend forward, Backend hostBackend) {
    if (backend != null && backend != forward) {
      throw new IllegalStateException(
          "this tape records on " + backend.name() + ", not also on " + forward.name());
    }
    backend = forward;
    host = hostBackend;
  }

  /** Asks for the gradient of {@code leaf} (and of every view of its storage). */
  public void track(Tensor leaf) {
    tracked.add(leaf.storage());
  }

  /** Whether {@code t} is a leaf or was computed from one. */
  public boolean tracks(Tensor t) {
    return t != null && tracked.contains(t.storage());
  }

  /** The number of operations recorded so far. */
  public int size() {
    return nodes.size();
  }

  /**
   * Records {@code output} of {@code op} when any of {@code inputs} is tracked, and returns it. An
   * output over an input's own storage (an operation that returned its input) is that input, which
   * the tape already follows.
   */
  Tensor record(String op, Tensor output, BackwardRule rule, Tensor... inputs) {
    boolean any = false;
    for (Tensor in : inputs) {
      if (in != null && in.storage() == output.storage()) {
        return output;
      }
      any |= tracks(in);
    }
    if (any) {
      nodes.add(new Node(op, output, rule));
      tracked.add(output.storage());
      for (Tensor in : inputs) {
        if (in != null) {
          read.add(in.storage());
        }
      }
    }
    return output;
  }

  /**
   * Reverse-mode differentiation of {@code output}: seeds its gradient with {@code seed} (its
   * shape, row-major) and runs every recorded rule in reverse order. Intermediate gradients are
   * dropped as soon as their operation has passed them on; the leaves' gradients remain, on the
   * device of each leaf.
   */
  public Gradients backward(Tensor output, float[] seed) {
    return backward(output, Tensor.of(seed, output.shape()));
  }

  /** {@link #backward(Tensor, float[])} with the seed a tensor of the output's shape. */
  Gradients backward(Tensor output, Tensor seed) {
    if (!tracks(output) || backend == null) {
      throw new IllegalArgumentException(
          backend == null
              ? "backward on a tape nothing was recorded on: nothing to differentiate"
              : "backward of a tensor computed from no tracked tensor: nothing to differentiate");
    }
    Gradients grads = new Gradients(backend, host);
    grads.accumulate(output, seed);
    // Each operation's backward is a step of the device's memory: what it allocated and its
    // output's gradient die with it, only the gradients still held survive, so a device reuses
    // that memory for the next operation instead of waiting for the garbage collector.
    Backend.StepMemory memory = backend.stepMemory();
    for (int i = nodes.size() - 1; i >= 0; i--) {
      Node node = nodes.get(i);
      if (!grads.reached(node.output())) {
        continue;
      }
      memory.step(
          () -> {
            Tensor g = grads.gather(node.output());
            grads.release(node.output());
            for (Contribution c : apply(node, g, this::tracks)) {
              grads.accumulate(c.target(), c.grad());
            }
          },
          grads::held);
    }
    // The leaves' gradients now belong to the caller's step (an optimiser's), which drops them
    // when it has used them, rather than to the garbage collector.
    memory.end();
    return grads;
  }

  /**
   * Passes gradients already in {@code grads} back through this tape's operations, in reverse
   * order, keeping every gradient: for a tape of tensors derived from the parameters before the
   * forward (at load time), whose gradients the forward's own backward left behind. Only inputs
   * {@code wanted} accepts receive gradients.
   */
  public void propagate(Gradients grads, Predicate<Tensor> wanted) {
    for (int i = nodes.size() - 1; i >= 0; i--) {
      Node node = nodes.get(i);
      Tensor g = grads.gather(node.output());
      if (g != null) {
        for (Contribution c : apply(node, g, t -> tracks(t) && wanted.test(t))) {
          grads.accumulate(c.target(), c.grad());
        }
      }
    }
  }

  /** The tensors the recorded operations produced, in order. */
  public List<Tensor> outputs() {
    return nodes.stream().map(Node::output).toList();
  }

  /**
   * The recorded outputs no later recorded operation read: what the recording handed on (a load's
   * derived tensors), not its intermediates (a part uploaded on its way into a stack).
   */
  public List<Tensor> finalOutputs() {
    return nodes.stream().map(Node::output).filter(t -> !read.contains(t.storage())).toList();
  }

  /** Runs one rule; a rule that fails names its operation. */
  private static List<Contribution> apply(Node node, Tensor g, Predicate<Tensor> wanted) {
    try {
      return node.rule().apply(g, wanted);
    } catch (RuntimeException e) {
      throw new IllegalStateException(
          "backward of " + node.op() + " " + node.output() + ": " + e.getMessage(), e);
    }
  }

  /** {@link #backward(Tensor, float[])} of a one-element output (a loss), seeded with 1. */
  public Gradients backward(Tensor scalar) {
    if (scalar.numel() != 1) {
      throw new IllegalArgumentException(
          "backward without a seed needs a one-element output, not " + scalar);
    }
    if (backend != null && scalar.device().kind() != Device.Kind.CPU) {
      // Made where the loss is: a host seed would be an upload, which a recording graph refuses.
      return backward(scalar, backend.affine(backend.zeros(DType.F32, scalar.shape()), 0f, 1f));
    }
    return backward(scalar, new float[] {1f});
  }
}

package dev.stepweave.training.autograd;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.ResidualNorm;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * What the recording backend asks of the backend it wraps: a fused operation in the training
 * forward is the wrapped backend's own kernel — on a device one kernel and one BF16 rounding, as
 * serving runs it — and its backward gives the same gradients as recording the SPI's composition
 * primitive by primitive, computing again only what those rules read beyond the inputs; a gradient
 * that is the first and whole one of its tensor becomes its buffer, without a zeroed buffer and a
 * copy.
 */
class WrappedBackendCallsTest {
  private final GradientCheck random = new GradientCheck(17);

  /** The CPU backend behind a proxy that counts each SPI call made on it, by name. */
  private static final class Counting {
    final Map<String, Integer> calls = new HashMap<>();
    final Backend backend;

    Counting() {
      CpuBackend cpu = new CpuBackend();
      backend =
          (Backend)
              Proxy.newProxyInstance(
                  Backend.class.getClassLoader(),
                  new Class<?>[] {Backend.class},
                  (proxy, method, args) -> {
                    calls.merge(method.getName(), 1, Integer::sum);
                    try {
                      return method.invoke(cpu, args);
                    } catch (InvocationTargetException e) {
                      throw e.getCause();
                    }
                  });
    }

    int calls(String op) {
      return calls.getOrDefault(op, 0);
    }
  }

  @Test
  void rmsNormRopeRunsTheKernelForwardAndItsCompositionsRulesBackward() {
    Tensor x = random.normal(2, 5, 12);
    Tensor weight = random.normal(12);
    Tensor cos = random.normal(5, 2);
    Tensor sin = random.normal(5, 2);
    Tensor seed = random.normal(2, 5, 3, 4);

    Counting counting = new Counting();
    RecordingBackend fused = new RecordingBackend(counting.backend);
    Tape tape = tapeOf(x, weight);
    Tensor out = fused.recording(tape, () -> fused.rmsNormRope(x, weight, 1e-6f, 3, cos, sin));
    assertEquals(1, counting.calls("rmsNormRope"), "the kernel ran once");
    assertEquals(0, counting.calls("rmsNorm") + counting.calls("rope"), "no primitive forward");
    assertEquals(1, tape.size(), "one node");
    Gradients grads = tape.backward(out, seed);
    // Its rules read only the input and the tables: nothing of the forward is computed again.
    assertEquals(0, counting.calls("rmsNorm"), "no norm computed again");
    assertEquals(1, counting.calls("rope"), "one inverse rotation");

    RecordingBackend primitives = new RecordingBackend(new CpuBackend());
    Tape reference = tapeOf(x, weight);
    Tensor composed =
        primitives.recording(
            reference,
            () ->
                primitives.rope(
                    primitives.rmsNorm(x, weight, 1e-6f).reshape(2, 5, 3, 4), cos, sin));
    assertEquals(2, reference.size());
    Gradients expected = reference.backward(composed, seed);
    assertArrayEquals(composed.toFloatArray(), out.toFloatArray(), 0f);
    for (Tensor t : List.of(x, weight)) {
      assertArrayEquals(expected.of(t).toFloatArray(), grads.of(t).toFloatArray(), 0f);
    }
  }

  @Test
  void aResidualNormIsTwoNodesOverTheKernelsResults() {
    Tensor x = random.normal(2, 5, 9);
    Tensor y = random.normal(2, 5, 9);
    Tensor gate = random.normal(2, 1, 9);
    Tensor weight = random.normal(9);
    Tensor bias = random.normal(9);

    Counting counting = new Counting();
    RecordingBackend fused = new RecordingBackend(counting.backend);
    Tape tape = tapeOf(y, weight);
    ResidualNorm[] kernel = new ResidualNorm[1];
    fused.recording(
        tape, () -> kernel[0] = fused.residualLayerNorm(x, y, gate, weight, bias, 1e-6f));
    assertEquals(1, counting.calls("residualLayerNorm"));
    assertEquals(0, counting.calls("layerNorm") + counting.calls("mul") + counting.calls("add"));
    assertEquals(2, tape.size(), "the residual's node and the norm's");
    // Evaluation mode is the kernel alone: no recording, the same call.
    ResidualNorm evaluated = fused.residualLayerNorm(x, y, gate, weight, bias, 1e-6f);
    assertEquals(2, counting.calls("residualLayerNorm"));
    assertArrayEquals(kernel[0].normed().toFloatArray(), evaluated.normed().toFloatArray(), 0f);
    assertEquals(2, tape.size(), "evaluation recorded nothing");
  }

  @Test
  void aFirstWholeGradientIsKeptNotCopied() {
    Tensor x = random.normal(4, 6);
    Counting counting = new Counting();
    RecordingBackend backend = new RecordingBackend(counting.backend);
    Tape tape = tapeOf(x);
    Tensor out = backend.recording(tape, () -> backend.silu(backend.affine(x, 2f, 1f)));
    int zeros = counting.calls("zeros");
    tape.backward(out, random.normal(4, 6));
    // Each rule's result is the whole gradient of its input (the values: BackwardRulesTest).
    assertEquals(0, counting.calls("copyInto") + counting.calls("addInto"), "no copy, no add");
    assertEquals(zeros, counting.calls("zeros"), "no zeroed buffer");
  }

  private static Tape tapeOf(Tensor... leaves) {
    Tape tape = new Tape();
    for (Tensor leaf : leaves) {
      tape.track(leaf);
    }
    return tape;
  }
}

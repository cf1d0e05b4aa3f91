package dev.stepweave.tensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.cpu.CpuBackend;
import java.lang.reflect.Constructor;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The graph-cache key: every field counts, the shape names every input; the CPU runs the body. */
class GraphKeyTest {
  private static final List<Tensor> INPUTS =
      List.of(Tensor.zeros(DType.F32, 1, 16, 1, 32, 32), Tensor.zeros(DType.F32, 1));
  private static final GraphKey KEY =
      GraphKey.of("wan-1", "transformer", "denoise", "DIFFUSION_STEP", "f32", "single", INPUTS);

  @Test
  void equalFieldsMakeEqualKeys() {
    GraphKey again =
        GraphKey.of(
            "wan-1",
            "transformer",
            "denoise",
            "DIFFUSION_STEP",
            "f32",
            "single",
            List.of(Tensor.zeros(DType.F32, 1, 16, 1, 32, 32), Tensor.full(3f, 1)));
    assertEquals(KEY, again);
    assertEquals(KEY.hashCode(), again.hashCode());
  }

  @Test
  void adaptersDistinguishKeysAndNoneIsTheEmptyComposition() {
    assertEquals("", KEY.adapters());
    assertNotEquals(KEY, KEY.withAdapters("a@0123#1*1.0"));
    assertEquals(KEY.withAdapters("a@0123#1*1.0"), KEY.withAdapters("a@0123#1*1.0"));
  }

  @Test
  void everyFieldDistinguishesKeys() throws ReflectiveOperationException {
    // Each key differs from KEY in one field (all are strings): none equals KEY or another.
    RecordComponent[] fields = GraphKey.class.getRecordComponents();
    assertEquals(8, fields.length, "a new field needs a place in this test's reasoning too");
    Class<?>[] types = new Class<?>[fields.length];
    Object[] base = new Object[fields.length];
    for (int i = 0; i < fields.length; i++) {
      types[i] = fields[i].getType();
      base[i] = fields[i].getAccessor().invoke(KEY);
    }
    Constructor<GraphKey> canonical = GraphKey.class.getDeclaredConstructor(types);
    List<GraphKey> keys = new ArrayList<>(List.of(KEY));
    for (int i = 0; i < fields.length; i++) {
      Object[] args = base.clone();
      args[i] = base[i] + "'";
      GraphKey changed = canonical.newInstance(args);
      for (GraphKey other : keys) {
        assertNotEquals(other, changed, fields[i].getName());
      }
      keys.add(changed);
    }
  }

  @Test
  void theShapeNamesEveryInputsDtypeAndShapeInOrder() {
    assertEquals("F32[1, 16, 1, 32, 32] F32[1]", KEY.shape());
    assertNotEquals(
        KEY.shape(),
        GraphKey.signature(
            List.of(Tensor.zeros(DType.F32, 1, 16, 1, 32, 32), Tensor.zeros(DType.BF16, 1))),
        "the dtype counts");
    assertNotEquals(
        KEY.shape(),
        GraphKey.signature(
            List.of(Tensor.zeros(DType.F32, 1), Tensor.zeros(DType.F32, 1, 16, 1, 32, 32))),
        "the order counts");
    assertNotEquals(
        KEY.shape(),
        GraphKey.signature(
            List.of(Tensor.zeros(DType.F32, 2, 16, 1, 32, 32), Tensor.zeros(DType.F32, 2))),
        "the batch counts");
  }

  @Test
  void theCpuBackendRunsTheBodyOnTheInputs() {
    Backend cpu = new CpuBackend();
    Tensor a = Tensor.of(new float[] {1, 2, 3}, 3);
    Tensor b = Tensor.of(new float[] {10, 20, 30}, 3);
    List<Tensor> inputs = List.of(a, b);
    GraphKey key = GraphKey.of("m", "c", "l", "k", "f32", "single", inputs);
    List<List<Tensor>> seen = new ArrayList<>();
    Tensor out =
        cpu.replayable(
            key,
            inputs,
            in -> {
              seen.add(in);
              return cpu.add(in.get(0), in.get(1));
            });
    assertArrayEquals(new float[] {11, 22, 33}, out.toFloatArray());
    assertEquals(1, seen.size(), "the body ran once");
    assertSame(inputs, seen.getFirst(), "on the caller's inputs");
  }

  @Test
  void aKeyThatDoesNotDescribeTheInputsIsRefused() {
    Backend cpu = new CpuBackend();
    List<Tensor> other = List.of(Tensor.zeros(DType.F32, 2));
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> cpu.replayable(KEY, other, in -> null));
    assertTrue(e.getMessage().contains("F32[2]"), e.getMessage());
  }
}

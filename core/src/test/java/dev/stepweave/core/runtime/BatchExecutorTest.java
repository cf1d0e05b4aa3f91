package dev.stepweave.core.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.loop.BatchableCall;
import dev.stepweave.core.loop.CancelScope;
import dev.stepweave.core.loop.ResourceRequest;
import dev.stepweave.core.loop.ShapeSignature;
import dev.stepweave.core.loop.StepResult;
import dev.stepweave.core.loop.WorkPlan;
import dev.stepweave.tensor.Fault;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The executor alone: what each class of failure does to a batch. */
class BatchExecutorTest {
  /** A failure the test's classifier calls out-of-memory. */
  static final class OutOfMemory extends RuntimeException {
    OutOfMemory(String m) {
      super(m);
    }
  }

  /** A failure the test's classifier calls pool-fatal, as a backend would a sticky error. */
  static final class Sticky extends RuntimeException {
    Sticky(String m) {
      super(m);
    }
  }

  private static Fault classify(RuntimeException e) {
    return switch (e) {
      case OutOfMemory o -> new Fault.OutOfMemory(o.getMessage());
      case Sticky s -> new Fault.PoolFatal(s.getMessage());
      default -> new Fault.RequestFatal(e.getMessage());
    };
  }

  private final BatchExecutor executor = new BatchExecutor(BatchExecutorTest::classify);
  private final List<Integer> batchSizes = new ArrayList<>();

  /** One member: its batch runs out of memory above {@code fits}, {@code failure} if any. */
  private record Call(int index, int fits, RuntimeException failure, List<Integer> sizes)
      implements BatchableCall {
    @Override
    public Object batchKey() {
      return "k";
    }

    @Override
    public StepResult run() {
      return runBatch(List.of(this)).getFirst();
    }

    @Override
    public List<StepResult> runBatch(List<BatchableCall> calls) {
      sizes.add(calls.size());
      if (calls.size() > fits) {
        throw new OutOfMemory("cannot allocate for " + calls.size());
      }
      for (BatchableCall c : calls) {
        if (((Call) c).failure() != null) {
          throw ((Call) c).failure();
        }
      }
      return calls.stream().map(c -> StepResult.of(Tensor.of(new float[] {1}, 1))).toList();
    }
  }

  /** {@code n} plans whose batches fit up to {@code fits}; member {@code faulty} throws. */
  private List<WorkPlan> plans(int n, int fits, int faulty, RuntimeException failure) {
    List<WorkPlan> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(
          new WorkPlan(
              "denoise",
              "pool",
              WorkKind.DIFFUSION_STEP,
              ShapeSignature.of("s", 1),
              ResourceRequest.NONE,
              new CancelScope("r" + i),
              0,
              new Call(i, fits, i == faulty ? failure : null, batchSizes)));
    }
    return out;
  }

  @Test
  void outOfMemoryRetriesOnceAsTwoHalvesAndEveryMemberSucceedsWhenTheyFit() {
    List<BatchExecutor.Outcome> out = executor.run(plans(4, 2, -1, null));
    assertEquals(List.of(4, 2, 2), batchSizes);
    out.forEach(o -> assertInstanceOf(BatchExecutor.Ok.class, o));
  }

  @Test
  void outOfMemoryAgainAtTheSmallerBatchFailsThoseRequestsAlone() {
    List<BatchExecutor.Outcome> out = executor.run(plans(4, 1, -1, null));
    assertEquals(List.of(4, 2, 2), batchSizes, "retried once, never again");
    for (BatchExecutor.Outcome o : out) {
      var f = assertInstanceOf(BatchExecutor.Fault.class, o);
      assertEquals(
          "out of device memory in a batch of 2: cannot allocate for 2", f.cause().getMessage());
    }
    // A single unit has no smaller batch: it fails at once.
    batchSizes.clear();
    var alone = executor.run(plans(1, 0, -1, null));
    assertEquals(List.of(1), batchSizes);
    assertInstanceOf(BatchExecutor.Fault.class, alone.getFirst());
  }

  @Test
  void aRequestFaultInABatchIsIsolatedToItsMember() {
    var out = executor.run(plans(3, 3, 1, new IllegalStateException("bad input")));
    assertEquals(List.of(3, 1, 1, 1), batchSizes, "the batch, then each member alone");
    assertInstanceOf(BatchExecutor.Ok.class, out.get(0));
    assertEquals(
        "bad input", assertInstanceOf(BatchExecutor.Fault.class, out.get(1)).cause().getMessage());
    assertInstanceOf(BatchExecutor.Ok.class, out.get(2));
  }

  @Test
  void aPoolFatalFailureIsNeverIsolatedItPropagatesAsPoolFatal() {
    PoolFatalException e =
        assertThrows(
            PoolFatalException.class,
            () -> executor.run(plans(2, 2, 0, new Sticky("illegal address"))));
    assertEquals("illegal address", e.getMessage());
    assertInstanceOf(Sticky.class, e.getCause());
    assertEquals(List.of(2), batchSizes, "no member re-ran on the broken pool");
    // A unit alone, likewise.
    assertThrows(
        PoolFatalException.class, () -> executor.run(plans(1, 1, 0, new Sticky("lost device"))));
  }
}

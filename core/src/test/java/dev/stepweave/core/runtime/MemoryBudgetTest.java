package dev.stepweave.core.runtime;

import static dev.stepweave.core.runtime.FakePool.expected;
import static dev.stepweave.core.runtime.FakePool.memoryOf;
import static dev.stepweave.core.runtime.FakePool.request;
import static dev.stepweave.core.runtime.FakePool.value;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.loop.ModelInstance;
import dev.stepweave.core.memory.MemoryBudget;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.ComponentMemory;
import dev.stepweave.tensor.DeviceMemory;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The admission budget made from a device's figures, and the engine reserving against it. */
class MemoryBudgetTest {
  private static final long GIB = 1L << 30;

  /** A backend that reports {@code memory} and does nothing else. */
  private static Backend reporting(DeviceMemory memory) {
    return (Backend)
        Proxy.newProxyInstance(
            Backend.class.getClassLoader(),
            new Class<?>[] {Backend.class},
            (proxy, method, args) -> {
              if (method.getName().equals("deviceMemory")) {
                return Optional.of(memory);
              }
              throw new UnsupportedOperationException(method.getName());
            });
  }

  /** {@code pool} served from {@code backend}. */
  private static ModelInstance on(FakePool pool, Backend backend) {
    return (ModelInstance)
        Proxy.newProxyInstance(
            ModelInstance.class.getClassLoader(),
            new Class<?>[] {ModelInstance.class},
            (proxy, method, args) -> {
              if (method.getName().equals("backend")) {
                return backend;
              }
              try {
                return method.invoke(pool, args);
              } catch (InvocationTargetException e) {
                throw e.getCause();
              }
            });
  }

  private static DeviceMemory h200Like() {
    return new DeviceMemory(
        140 * GIB,
        100 * GIB,
        3 * GIB,
        List.of(
            new ComponentMemory("wan-1/text_encoder", 0, 11 * GIB, 11 * GIB, true),
            new ComponentMemory("wan-1/transformer", 6 * GIB, 6 * GIB, 6 * GIB - 1000, false),
            new ComponentMemory("wan-1/vae", GIB / 2, GIB / 2, GIB / 2 - 10, false)));
  }

  @Test
  void theBudgetIsTheDeviceLessAwakeWeightsOutsideUseAndHeadroom() {
    MemoryBudget b = MemoryBudget.of(h200Like(), 14 * GIB);
    // In use: 40 GiB, of which 6.5 the awake pools and 3 the allocator: 30.5 outside.
    assertEquals(61 * GIB / 2, b.outsideBytes());
    // The sleeping text encoder counts at its awake size: it wakes when used.
    assertEquals(35 * GIB / 2, b.componentBytes());
    assertEquals(140 * GIB - 35 * GIB / 2 - 61 * GIB / 2 - 14 * GIB, b.requestBytes());
    assertEquals(78 * GIB, b.requestBytes());
    assertEquals(
        "memory budget: 140.0 GiB device − 17.5 GiB weights (wan-1/text_encoder 11.0 asleep,"
            + " wan-1/transformer 6.0, wan-1/vae 0.5) − 30.5 GiB in use outside Stepweave − 14.0"
            + " GiB headroom = 78.0 GiB for requests (resident + peak, reserved at admission)",
        b.describe());
  }

  @Test
  void theDefaultHeadroomIsATenthOfTheDeviceAndTheBudgetNeverNegative() {
    assertEquals(14 * GIB, MemoryBudget.defaultHeadroom(140 * GIB));
    MemoryBudget measured =
        MemoryBudget.measure(on(new FakePool(), reporting(h200Like())), OptionalLong.empty())
            .orElseThrow();
    assertEquals(14 * GIB, measured.headroomBytes());
    assertEquals(78 * GIB, measured.requestBytes());
    assertEquals(0, MemoryBudget.of(h200Like(), 200 * GIB).requestBytes());
    assertThrows(IllegalArgumentException.class, () -> MemoryBudget.of(h200Like(), -1));
  }

  @Test
  void ofComponentsTakingTurnsOnlyTheLargestCounts() {
    // Two 27 GiB experts, one asleep, beside an 11 GiB text encoder on an 80 GiB device.
    DeviceMemory memory =
        new DeviceMemory(
            80 * GIB,
            41 * GIB,
            GIB,
            List.of(
                new ComponentMemory("fake/text_encoder", 11 * GIB, 11 * GIB, 11 * GIB, false),
                new ComponentMemory("fake/a", 27 * GIB, 27 * GIB, 27 * GIB, false),
                new ComponentMemory("fake/b", 0, 26 * GIB, 26 * GIB, true)));
    assertEquals(64 * GIB, MemoryBudget.of(memory, 8 * GIB).componentBytes());
    FakePool pool = new FakePool();
    pool.turns = new FakeTurns(1000, () -> {});
    MemoryBudget turns =
        MemoryBudget.measure(on(pool, reporting(memory)), OptionalLong.of(8 * GIB)).orElseThrow();
    assertEquals(38 * GIB, turns.componentBytes());
    assertEquals(80 * GIB - 38 * GIB - 8 * GIB, turns.requestBytes());
    assertEquals(
        "memory budget: 80.0 GiB device − 38.0 GiB weights (fake/text_encoder 11.0, fake/a 27.0,"
            + " fake/b 26.0 asleep; of fake/a, fake/b one awake at a time) − 0.0 GiB in use"
            + " outside Stepweave − 8.0 GiB headroom = 34.0 GiB for requests (resident + peak,"
            + " reserved at admission)",
        turns.describe());
  }

  @Test
  void aBackendWithoutDeviceMemoryKeepsTheConfiguredBudget() {
    ModelInstance onCpu = on(new FakePool(), new dev.stepweave.tensor.cpu.CpuBackend(1));
    assertTrue(MemoryBudget.measure(onCpu, OptionalLong.of(GIB)).isEmpty());
  }

  @Test
  void theEngineReservesAgainstTheDevicesBudget() throws Exception {
    // 1,000,000 bytes: 500,000 free, 100,000 the allocator's, a 200,000-byte pool, so 200,000 in
    // use outside; with 344,000 of headroom, requests may reserve 256,000 bytes.
    DeviceMemory small =
        new DeviceMemory(
            1_000_000,
            500_000,
            100_000,
            List.of(new ComponentMemory("fake/weights", 200_000, 200_000, 199_000, false)));
    FakePool pool = new FakePool();
    ModelInstance model = on(pool, reporting(small));
    MemoryBudget budget = MemoryBudget.measure(model, OptionalLong.of(344_000)).orElseThrow();
    assertEquals(memoryOf(256), budget.requestBytes());
    try (Engine engine =
        new Engine(
            model, EngineConfig.builder().memoryBudgetBytes(budget.requestBytes()).build())) {
      var e =
          assertThrows(
              AdmissionRejectedException.class, () -> engine.submit(request("huge", 2, 512)));
      assertTrue(
          e.getMessage().endsWith("needs 512000 bytes of device memory, the pool has 256000"),
          e.getMessage());
      var fits = engine.submit(request("fits", 2, 256));
      assertEquals(expected(2), value(fits.result().get(30, TimeUnit.SECONDS)));
    }
  }
}

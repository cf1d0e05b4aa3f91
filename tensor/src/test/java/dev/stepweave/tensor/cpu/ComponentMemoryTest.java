package dev.stepweave.tensor.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.ComponentMemory;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.DeviceMemory;
import dev.stepweave.tensor.Tensor;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The Backend SPI's component-memory defaults on the CPU (which pools nothing) and the arithmetic
 * of the memory records a device backend reports.
 */
class ComponentMemoryTest {
  private final CpuBackend cpu = new CpuBackend(1);

  @Test
  void theCpuLoadsAComponentByRunningTheLoadOnceAndPoolsNothing() {
    AtomicInteger runs = new AtomicInteger();
    Tensor w = Tensor.of(new float[] {1, 2, 3}, 3);
    Tensor loaded =
        cpu.loadingComponent(
            "m/transformer",
            () -> {
              runs.incrementAndGet();
              return cpu.upload(w, DType.F32);
            });
    assertEquals(1, runs.get());
    assertEquals(Device.CPU, loaded.device());
    assertArrayEquals(w.toFloatArray(), loaded.toFloatArray());
    // Nothing to release or restore, known component or not; no device memory to report.
    cpu.sleepComponent("m/transformer");
    cpu.wakeComponent("m/transformer");
    cpu.sleepComponent("never loaded");
    cpu.releaseComponent("m/transformer");
    assertTrue(cpu.deviceMemory().isEmpty());
    assertArrayEquals(w.toFloatArray(), loaded.toFloatArray());
  }

  @Test
  void loadsNestAndReturnTheirResult() {
    Object inner = new Object();
    assertSame(inner, cpu.loadingComponent("a", () -> cpu.loadingComponent("b", () -> inner)));
  }

  @Test
  void aDeviceAccountSeparatesPoolsAllocatorAndOutsideUse() {
    long gib = 1L << 30;
    DeviceMemory m =
        new DeviceMemory(
            100 * gib,
            60 * gib,
            2 * gib,
            List.of(
                new ComponentMemory("m/transformer", 20 * gib, 20 * gib, 19 * gib, false),
                new ComponentMemory("m/text_encoder", 0, 10 * gib, 10 * gib, true)));
    assertEquals(20 * gib, m.componentBytes(), "an asleep pool holds nothing now");
    assertEquals(30 * gib, m.awakeComponentBytes());
    // 40 GiB in use: 20 the pools, 2 the allocator, the other 18 neither.
    assertEquals(18 * gib, m.outsideBytes());
  }

  @Test
  void inconsistentFiguresAreRefused() {
    assertThrows(
        IllegalArgumentException.class, () -> new ComponentMemory("c", 0, 4096, 100, false));
    assertThrows(
        IllegalArgumentException.class, () -> new ComponentMemory("c", 4096, 4096, 100, true));
    assertThrows(
        IllegalArgumentException.class, () -> new ComponentMemory("c", 4096, 4096, 8192, false));
    assertThrows(IllegalArgumentException.class, () -> new DeviceMemory(10, 11, 0, List.of()));
    assertThrows(IllegalArgumentException.class, () -> new DeviceMemory(10, 5, -1, List.of()));
  }
}

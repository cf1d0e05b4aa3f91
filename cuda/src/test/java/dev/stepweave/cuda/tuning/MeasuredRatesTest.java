package dev.stepweave.cuda.tuning;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.stepweave.tensor.DeviceRates;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Rates measured once per device and dtype are read back by a later process, not re-measured. */
class MeasuredRatesTest {
  @TempDir Path dir;

  private final AtomicInteger probes = new AtomicInteger();

  private DeviceRates probe() {
    probes.incrementAndGet();
    return new DeviceRates(8.31e11, 2.175e9, "BF16 GEMM 831 TFLOP/s, copy 2175 GB/s (measured)");
  }

  private DeviceRates rates(Path where, String dtype) {
    return MeasuredRates.readOrMeasure(where, "NVIDIA H200", "sm_90", dtype, this::probe);
  }

  @Test
  void aLaterProcessReadsTheRatesOfTheSameDeviceAndDtype() {
    DeviceRates first = rates(dir, "BF16");
    DeviceRates second = rates(dir, "BF16");
    assertEquals(1, probes.get());
    assertEquals(first.flopsPerMilli(), second.flopsPerMilli());
    assertEquals(first.bytesPerMilli(), second.bytesPerMilli());
    assertEquals(
        "BF16 GEMM 831 TFLOP/s, copy 2175 GB/s (measured by an earlier process)", second.how());
    rates(dir, "F32");
    assertEquals(2, probes.get(), "another dtype is measured on its own");
  }

  @Test
  void anUnreadableFileIsMeasuredOverAndNoFolderKeepsNothing() throws Exception {
    rates(dir, "BF16");
    try (var files = Files.list(dir)) {
      Files.writeString(files.findFirst().orElseThrow(), "flopsPerMilli=fast\n");
    }
    rates(dir, "BF16");
    assertEquals(2, probes.get());
    rates(null, "BF16");
    rates(null, "BF16");
    assertEquals(4, probes.get());
  }
}

package dev.stepweave.tensor.cpu;

import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.DeviceRates;
import org.junit.jupiter.api.Test;

/** The CPU backend's rates are measured on this machine, once per backend. */
class CpuRatesTest {
  @Test
  void ratesAreMeasuredOnceAndSayHow() {
    CpuBackend cpu = new CpuBackend();
    DeviceRates r = cpu.deviceRates().orElseThrow();
    // Between a very slow machine (10 MFLOP/s) and any CPU there is (100 TFLOP/s).
    assertTrue(r.flopsPerMilli() > 1e4 && r.flopsPerMilli() < 1e11, r.how());
    assertTrue(r.bytesPerMilli() > 1e4 && r.bytesPerMilli() < 1e11, r.how());
    assertTrue(r.how().startsWith("CPU measured at start: "), r.how());
    assertSame(r, cpu.deviceRates().orElseThrow());
  }
}

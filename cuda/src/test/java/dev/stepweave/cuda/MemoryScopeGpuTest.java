package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.cuda.memory.DeviceTensors;
import dev.stepweave.cuda.memory.MemoryScope;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.RandomWeights;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Scopes release what the caller no longer needs at once; kept tensors, and tensors made before a
 * scope, stay intact. Each test uses its own unusual size class (multiples of 512 bytes), so no
 * other test's block is cached there and a released block is the next one handed out.
 */
@Tag("gpu")
class MemoryScopeGpuTest {
  @Test
  void releasedBlocksAreReusedAndKeptOnesSurvive() {
    CudaBackend gpu = Gpu.backend();
    Tensor host = RandomWeights.uniform(5, 1f, 7, 3001);
    try (MemoryScope scope = gpu.openScope()) {
      Tensor kept = gpu.upload(host, DType.F32);
      Tensor dead = gpu.affine(kept, 2f, 0f);
      long deadAddress = DeviceTensors.address(dead);
      scope.releaseExcept(kept);
      long reserved = gpu.reservedBytes();
      Tensor next = gpu.zeros(DType.F32, 7, 3001);
      assertEquals(deadAddress, DeviceTensors.address(next), "the released block is reused");
      assertEquals(reserved, gpu.reservedBytes(), "no new device memory for the reused block");
      assertArrayEquals(host.toFloatArray(), gpu.download(kept).toFloatArray());
    }
  }

  @Test
  void anInnerScopeHandsItsKeptTensorsToTheOuterOne() {
    CudaBackend gpu = Gpu.backend();
    Tensor host = RandomWeights.uniform(6, 1f, 7, 3301);
    try (MemoryScope outer = gpu.openScope()) {
      Tensor kept;
      try (MemoryScope inner = gpu.openScope()) {
        kept = gpu.upload(host, DType.F32);
        inner.releaseExcept(kept);
      }
      long address = DeviceTensors.address(kept);
      outer.releaseExcept();
      assertEquals(address, DeviceTensors.address(gpu.zeros(DType.F32, 7, 3301)), "outer released");
    }
  }

  @Test
  void scopedReleasesWhatItsBodyMadeButItsResult() {
    CudaBackend gpu = Gpu.backend();
    Tensor host = RandomWeights.uniform(7, 1f, 7, 3601);
    Tensor input = gpu.upload(host, DType.F32);
    long[] deadAddress = new long[1];
    Tensor result =
        gpu.scoped(
            () -> {
              Tensor dead = gpu.affine(input, 2f, 0f);
              deadAddress[0] = DeviceTensors.address(dead);
              return gpu.affine(dead, 1f, 1f);
            });
    Tensor next = gpu.zeros(DType.F32, 7, 3601);
    assertEquals(deadAddress[0], DeviceTensors.address(next), "the body's temporary is reused");
    assertNotEquals(DeviceTensors.address(input), DeviceTensors.address(next), "the input is kept");
    assertArrayEquals(host.toFloatArray(), gpu.download(input).toFloatArray());
    assertArrayEquals(
        twicePlusOne(host), gpu.download(result).toFloatArray(), "the result is intact");
  }

  @Test
  void chainReleasesEachStepsResultOnceTheNextReturned() {
    CudaBackend gpu = Gpu.backend();
    Tensor host = RandomWeights.uniform(8, 1f, 7, 3901);
    Tensor input = gpu.upload(host, DType.F32);
    // Garbage of earlier tests is handed back now, not by the cleaner during the measurement.
    System.gc();
    gpu.synchronize();
    long before = gpu.liveBytes();
    long[] addresses = new long[3];
    Tensor result =
        gpu.chain(
            input,
            0,
            3,
            (i, h) -> {
              Tensor out = gpu.affine(h, 1f, 1f);
              addresses[i] = DeviceTensors.address(out);
              return out;
            });
    assertEquals(addresses[2], DeviceTensors.address(result));
    // Step 0's result was released after step 1, step 1's after step 2: of the three results
    // only the last is live. Live bytes count whole allocator blocks (a little more than the
    // tensor); without the release the growth would be three blocks.
    long grown = gpu.liveBytes() - before;
    assertTrue(grown < 2 * result.byteSize(), "live bytes grew by " + grown);
    assertArrayEquals(host.toFloatArray(), gpu.download(input).toFloatArray());
    float[] expected = host.toFloatArray();
    for (int i = 0; i < expected.length; i++) {
      expected[i] += 3f;
    }
    assertArrayEquals(expected, gpu.download(result).toFloatArray(), 1e-6f);
  }

  private static float[] twicePlusOne(Tensor host) {
    float[] v = host.toFloatArray();
    for (int i = 0; i < v.length; i++) {
      v[i] = v[i] * 2f + 1f;
    }
    return v;
  }

  @Test
  void theCensusNamesWhereThePeaksBytesWereAllocated() {
    CudaBackend gpu = Gpu.backend();
    gpu.census(true);
    try (MemoryScope scope = gpu.openScope()) {
      gpu.resetPeaks();
      // 256 MB each, so the census (one per 64 MB of new high) sees both; released before the
      // report, which is of the peak.
      Tensor first = gpu.zeros(DType.F32, 64, 1 << 20);
      Tensor second = gpu.zeros(DType.F32, 64, 1 << 20);
      long size = first.storage().byteSize();
      scope.releaseExcept();
      String census = gpu.liveAtPeak();
      System.out.print(census);
      // This test lives in the backend's package, so its frames are not the model-side site: the
      // backend method that allocated is what names the blocks here.
      assertTrue(census.contains("CudaBackend.zeros"), "the allocating call is named: " + census);
      long blocks = 0;
      double gigabytes = 0;
      for (String line : census.lines().toList()) {
        String[] words = line.trim().split(" +");
        gigabytes += Double.parseDouble(words[0]);
        blocks += Long.parseLong(words[3]);
      }
      assertTrue(blocks >= 2, "both blocks are in the census: " + census);
      assertTrue(gigabytes * 1e9 >= 2 * size * 0.999, "the census holds both: " + census);
      assertTrue(gpu.peakLiveBytes() >= 2 * size, "both were live at once");
    } finally {
      gpu.census(false);
    }
  }
}

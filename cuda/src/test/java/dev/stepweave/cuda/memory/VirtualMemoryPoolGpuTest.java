package dev.stepweave.cuda.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.cuda.CudaBackend;
import dev.stepweave.cuda.Gpu;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Storage;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.RandomWeights;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** A component pool releases its physical memory on sleep and restores it, same addresses. */
@Tag("gpu")
class VirtualMemoryPoolGpuTest {

  @Test
  void sleepReleasesAndWakeRestoresContentsAtTheSameAddress() {
    CudaBackend gpu = Gpu.backend();
    long bytes = 256L << 20;
    try (VirtualMemoryPool pool = new VirtualMemoryPool("transformer", gpu.context(), bytes)) {
      long at = pool.allocate(bytes / 2);
      Tensor view =
          Tensor.contiguousOver(
              new Storage(MemorySegment.ofAddress(at).reinterpret(bytes / 2), gpu.device()),
              DType.F32,
              (int) (bytes / 8));
      Tensor data = RandomWeights.uniform(5, 1f, (int) (bytes / 8));
      gpu.tensors().copy(gpu.upload(data, DType.F32), view);
      gpu.synchronize();
      long held = pool.reservedBytes();
      assertTrue(held >= bytes / 2, "mapped " + held);
      long freeBefore = gpu.context().memoryInfo()[0];
      pool.sleep();
      assertEquals(0, pool.reservedBytes());
      long freed = gpu.context().memoryInfo()[0] - freeBefore;
      assertTrue(freed >= held, "sleep gave back " + freed + " of " + held + " bytes");
      pool.wake();
      assertEquals(held, pool.reservedBytes());
      assertArrayEquals(data.toFloatArray(), gpu.download(view).toFloatArray());
      System.out.printf("  pool: %d MiB released on sleep, restored on wake%n", freed >> 20);
    }
  }
}

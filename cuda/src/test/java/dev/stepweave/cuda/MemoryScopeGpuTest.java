package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** A scope releases what the caller no longer needs at once; the kept tensors stay intact. */
@Tag("gpu")
class MemoryScopeGpuTest {
  @Test
  void releasedBlocksAreReusedAndKeptOnesSurvive() {
    CudaBackend gpu = Gpu.backend();
    // An unusual size, so no other test's block of the same size class is cached.
    Tensor host = RandomWeights.uniform(5, 1f, 7, 3001);
    try (MemoryScope scope = gpu.openScope()) {
      Tensor kept = gpu.upload(host, DType.F32);
      Tensor dead = gpu.affine(kept, 2f, 0f);
      long deadAddress = CudaBackend.address(dead);
      scope.releaseExcept(kept);
      long reserved = gpu.reservedBytes();
      Tensor next = gpu.zeros(DType.F32, 7, 3001);
      assertEquals(deadAddress, CudaBackend.address(next), "the released block is reused");
      assertEquals(reserved, gpu.reservedBytes(), "no new device memory for the reused block");
      assertArrayEquals(host.toFloatArray(), gpu.download(kept).toFloatArray());
      assertThrows(IllegalStateException.class, gpu::openScope);
    }
  }
}

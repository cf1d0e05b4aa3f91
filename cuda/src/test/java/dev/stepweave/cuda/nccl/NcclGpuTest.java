package dev.stepweave.cuda.nccl;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.cuda.CudaBackend;
import dev.stepweave.cuda.Gpu;
import dev.stepweave.cuda.driver.CudaException;
import dev.stepweave.cuda.driver.CudaLibraries;
import dev.stepweave.cuda.memory.DeviceTensors;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The NCCL bindings on one device: a 1-rank communicator (by {@code ncclCommInitAll} and by a
 * unique id and {@code ncclCommInitRank}) all-reduces, broadcasts and all-gathers a small buffer on
 * the backend's stream, alone and in a group; errors carry NCCL's message.
 */
@Tag("gpu")
class NcclGpuTest {
  private static final float[] VALUES = {1.5f, -2f, 3.25f, 4f, 0f};

  @Test
  void aOneRankCommunicatorRunsTheCollectives() {
    CudaBackend gpu = Gpu.backend();
    assertTrue(
        CudaLibraries.nccl().isPresent(),
        "libnccl.so.2 not found: set NCCL_HOME or LD_LIBRARY_PATH to the directory holding it");
    int version = Nccl.version();
    System.out.println("NCCL version code " + version);
    assertTrue(version >= 22000, "NCCL 2.20 or later, got " + version);

    long[] comms = Nccl.initAll(gpu.context().device());
    assertEquals(1, comms.length);
    try {
      collectives(gpu, comms[0]);
    } finally {
      Nccl.destroy(comms[0]);
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment id = Nccl.uniqueId(arena);
      long comm = Nccl.initRank(1, id, 0);
      try {
        collectives(gpu, comm);
      } finally {
        Nccl.destroy(comm);
      }
    }
  }

  private static void collectives(CudaBackend gpu, long comm) {
    assertEquals(1, Nccl.count(comm));
    long stream = gpu.context().stream();
    int n = VALUES.length;
    Tensor x = gpu.upload(Tensor.of(VALUES, n), DType.F32);
    Tensor sum = gpu.zeros(DType.F32, n);
    Tensor max = gpu.zeros(DType.F32, n);
    Tensor root = gpu.zeros(DType.F32, n);
    Tensor gathered = gpu.zeros(DType.F32, n);
    Nccl.allReduce(addr(x), addr(sum), n, Nccl.DataType.FLOAT32, Nccl.ReduceOp.SUM, comm, stream);
    Nccl.broadcast(addr(x), addr(root), n, Nccl.DataType.FLOAT32, 0, comm, stream);
    Nccl.allGather(addr(x), addr(gathered), n, Nccl.DataType.FLOAT32, comm, stream);
    Nccl.groupStart();
    Nccl.allReduce(addr(x), addr(max), n, Nccl.DataType.FLOAT32, Nccl.ReduceOp.MAX, comm, stream);
    Nccl.groupEnd();
    for (Tensor t : new Tensor[] {sum, max, root, gathered}) {
      assertArrayEquals(VALUES, gpu.download(t).toFloatArray(), "one rank: the values themselves");
    }
    CudaException e =
        assertThrows(
            CudaException.class,
            () -> Nccl.broadcast(addr(x), addr(root), n, Nccl.DataType.FLOAT32, 5, comm, stream));
    assertTrue(e.getMessage().contains("ncclBroadcast"), e.getMessage());
    System.out.println("NCCL error for root 5 of 1 rank: " + e.getMessage());
  }

  private static long addr(Tensor t) {
    return DeviceTensors.address(t);
  }
}

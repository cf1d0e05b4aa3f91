package dev.stepweave.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.cuda.CudaBackend;
import dev.stepweave.cuda.Gpu;
import java.nio.file.Path;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Every shipped kernel source compiles with NVRTC for this device, and the cache is used. */
@Tag("gpu")
class KernelSourcesGpuTest {

  @Test
  void everySourceCompilesAndTheSecondLoadComesFromTheCache(@TempDir Path cache) {
    CudaBackend gpu = Gpu.backend();
    KernelCompiler compiler = new KernelCompiler(gpu.context().arch(), cache);
    for (String file : Kernels.FILES) {
      long t0 = System.nanoTime();
      byte[] first = compiler.cubin(file);
      long t1 = System.nanoTime();
      byte[] second = compiler.cubin(file);
      long t2 = System.nanoTime();
      assertTrue(first.length > 0 && java.util.Arrays.equals(first, second), file);
      System.out.printf(
          "  %-16s %6d bytes, compiled in %5.1f ms, cached load %4.2f ms%n",
          file, first.length, (t1 - t0) / 1e6, (t2 - t1) / 1e6);
    }
  }
}

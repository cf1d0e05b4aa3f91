package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The on-device non-finite check agrees with a host scan, for F32 and BF16, whole and sliced. */
@Tag("gpu")
class FiniteCheckGpuTest {
  @Test
  void theDeviceFlagAgreesWithTheHostScan() {
    CudaBackend gpu = Gpu.backend();
    Random random = new Random(7);
    int n = 3 * 1024 * 1024 + 5; // past one grid-stride pass of the launch
    for (DType dtype : new DType[] {DType.F32, DType.BF16}) {
      for (float bad : new float[] {Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY}) {
        for (int at : new int[] {-1, 0, n / 2, n - 1}) {
          float[] values = new float[n];
          for (int i = 0; i < n; i++) {
            values[i] = (float) random.nextGaussian() * 1e4f;
          }
          if (at >= 0) {
            values[at] = bad;
          }
          Tensor host = Tensor.of(values, n);
          Tensor device = gpu.upload(host, dtype);
          String what = dtype + " with " + bad + " at " + at;
          assertEquals(at < 0, gpu.isFinite(device), what);
          assertEquals(Backend.isFiniteOnHost(host), gpu.isFinite(device), what + " vs host");
          // A row of a batched output, as the engine checks it after splitting a call.
          Tensor rows = device.reshape(1, n);
          assertEquals(at < 0, gpu.isFinite(rows.slice(0, 0, 1)), what + ", a sliced row");
        }
      }
    }
  }
}

package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.RandomWeights;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Copies between host and device. A big upload staged through page-locked memory in parallel slices
 * lands whole, across chunk boundaries. A queued download (what recovery checkpoints use) gives,
 * once the device synchronises, the very elements a synchronous download gives, in the tensor's own
 * dtype — for whole tensors and strided views, also when the stream has more work queued behind the
 * copy.
 */
@Tag("gpu")
class HostCopiesGpuTest {
  @Test
  void aQueuedCopyHoldsTheTensorOnceTheDeviceSynchronises() {
    CudaBackend gpu = Gpu.backend();
    Random random = new Random(11);
    int rows = 1024;
    int cols = 2049; // a few MB, past the smallest pinned size class
    float[] values = new float[rows * cols];
    for (int i = 0; i < values.length; i++) {
      values[i] = (float) random.nextGaussian();
    }
    for (DType dtype : new DType[] {DType.F32, DType.BF16}) {
      Tensor device = gpu.upload(Tensor.of(values, rows, cols), dtype);
      Tensor view = device.transpose(0, 1).slice(0, 1, cols);
      var whole = gpu.downloadQueued(device);
      var strided = gpu.downloadQueued(view);
      // Work queued behind the copies, which must not change what they copied.
      Tensor later = gpu.affine(device, 3f, 1f);
      gpu.synchronize();
      assertEquals(Device.Kind.CPU, whole.get().device().kind());
      assertEquals(dtype, whole.get().dtype(), "the tensor's own dtype");
      assertArrayEquals(
          gpu.download(device).toFloatArray(), whole.get().toFloatArray(), dtype + "");
      assertArrayEquals(
          gpu.download(view).toFloatArray(), strided.get().toFloatArray(), dtype + " strided view");
      assertEquals(gpu.download(later).numel(), whole.get().numel());
      assertSame(whole.get(), whole.get(), "one host tensor");
    }
  }

  @Test
  void stagedCopiesLandWholeAcrossTheirChunks() {
    CudaBackend gpu = Gpu.backend();
    // 150 MiB of F32 (three 64 MiB staging chunks, the last partial), and one just over the
    // threshold (4 MiB + 4 bytes), each element its own index so a misplaced slice shows.
    for (int n : new int[] {150 * (1 << 18) + 3, (1 << 20) + 1}) {
      float[] values = new float[n];
      for (int i = 0; i < n; i++) {
        values[i] = i;
      }
      Tensor back = gpu.download(gpu.upload(Tensor.of(values, n), DType.F32));
      assertArrayEquals(values, back.toFloatArray(), n + " elements");
    }
  }

  @Test
  void aDownloadIntoATensorMadeAheadEqualsTheDownload() {
    CudaBackend gpu = Gpu.backend();
    // A strided BF16 view of 40 MiB (staged), as the decode's post-processed video is downloaded.
    Tensor device =
        gpu.upload(RandomWeights.uniform(5, 1f, 3, 41, 160, 533), DType.BF16).permute(1, 2, 3, 0);
    Tensor into = Tensor.zeros(DType.F32, device.shape());
    gpu.downloadInto(device, into);
    assertArrayEquals(gpu.download(device).toFloatArray(), into.toFloatArray());
    var e =
        assertThrows(
            IllegalArgumentException.class,
            () -> gpu.downloadInto(device, Tensor.zeros(DType.F32, 41, 160, 533)));
    assertEquals(
        "downloadInto needs a contiguous F32 CPU tensor of shape [41, 160, 533, 3], got "
            + Tensor.zeros(DType.F32, 41, 160, 533),
        e.getMessage());
  }

  @Test
  void queuedDownloadsIntoSlicesOfATensorMadeMeanwhileAssembleTheWhole() {
    CudaBackend gpu = Gpu.backend();
    // As the decode streams a video: chunks of frames (strided BF16 views) queued into their
    // place in a host tensor that another thread is still making.
    Tensor device =
        gpu.upload(RandomWeights.uniform(6, 1f, 3, 17, 96, 160), DType.BF16).permute(1, 2, 3, 0);
    var made =
        java.util.concurrent.CompletableFuture.supplyAsync(
            () -> Tensor.zeros(DType.F32, device.shape()));
    int[] starts = {0, 1, 5, 9, 13, 17};
    List<java.util.function.Supplier<Tensor>> landed = new java.util.ArrayList<>();
    for (int c = 0; c + 1 < starts.length; c++) {
      int from = starts[c], to = starts[c + 1];
      landed.add(
          gpu.downloadQueuedInto(device.slice(0, from, to), () -> made.join().slice(0, from, to)));
    }
    gpu.synchronize();
    for (int c = 0; c < landed.size(); c++) {
      assertArrayEquals(
          gpu.download(device.slice(0, starts[c], starts[c + 1])).toFloatArray(),
          landed.get(c).get().toFloatArray(),
          "chunk " + c);
    }
    assertArrayEquals(gpu.download(device).toFloatArray(), made.join().toFloatArray());
  }
}

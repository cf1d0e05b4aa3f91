package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.RandomWeights;
import dev.stepweave.training.optim.AdamW;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * {@link AdamW} of parameters on the GPU ({@code Backend.adamw}'s kernel) against the same steps of
 * host parameters: the parameters and both moments bit for bit after three steps with weight decay,
 * on sizes that are no multiple of a block (the kernel rounds every operation on its own, as the
 * CPU's loop does; a fused multiply-add anywhere would show in the last bits), and a GPU optimiser
 * restored from the host's state. The multi-tensor launches (48 tensors a table, 4 096 elements a
 * block) over more tensors than one table holds, of sizes around a block's: AdamW with a gradient
 * scale against the CPU's per-tensor loop bit for bit, the sums of squares against the host's
 * double sums.
 */
@Tag("gpu")
class AdamWGpuTest {
  @Test
  void threeStepsOnTheGpuAreTheCpusBitForBit() {
    CudaBackend gpu = Gpu.backend();
    AdamW.Settings settings = new AdamW.Settings(0.9, 0.99, 1e-8, 0.1);
    AdamW onHost = new AdamW(settings);
    AdamW onGpu = new AdamW(settings, gpu);
    Map<String, Tensor> host = new TreeMap<>();
    Map<String, Tensor> device = new TreeMap<>();
    int[][] shapes = {{100_003}, {7, 33}, {1}};
    for (int i = 0; i < shapes.length; i++) {
      Tensor p = RandomWeights.uniform(10 + i, 1f, shapes[i]);
      host.put("p" + i, Tensor.of(p.toFloatArray(), shapes[i]));
      device.put("p" + i, gpu.upload(p, DType.F32));
    }
    for (int step = 0; step < 3; step++) {
      Map<String, Tensor> grads = new TreeMap<>();
      for (int i = 0; i < shapes.length; i++) {
        grads.put("p" + i, RandomWeights.uniform(100 * step + i, 0.1f, shapes[i]));
      }
      onHost.step(host, grads, 1e-3 * (step + 1));
      onGpu.step(device, grads, 1e-3 * (step + 1));
    }
    for (String name : host.keySet()) {
      assertArrayEquals(
          host.get(name).toFloatArray(), gpu.download(device.get(name)).toFloatArray(), name);
    }
    AdamW.State want = onHost.state(), got = onGpu.state();
    assertEquals(want.steps(), got.steps());
    for (String name : host.keySet()) {
      assertArrayEquals(want.firstMoments().get(name), got.firstMoments().get(name), "m " + name);
      assertArrayEquals(want.secondMoments().get(name), got.secondMoments().get(name), "v " + name);
    }
    // A GPU optimiser restored from the host's state takes the host's next step.
    AdamW resumed = new AdamW(settings, gpu);
    resumed.restore(want);
    Map<String, Tensor> grads = new TreeMap<>();
    host.forEach((name, p) -> grads.put(name, RandomWeights.uniform(7, 0.1f, p.shape())));
    onHost.step(host, grads, 1e-3);
    resumed.step(device, grads, 1e-3);
    for (String name : host.keySet()) {
      assertArrayEquals(
          host.get(name).toFloatArray(),
          gpu.download(device.get(name)).toFloatArray(),
          "after a restore: " + name);
    }
  }

  @Test
  void aHostParameterIsRefusedByTheGpusStep() {
    CudaBackend gpu = Gpu.backend();
    Tensor p = Tensor.of(new float[4], 4);
    var e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                new AdamW(AdamW.Settings.torchDefaults(), gpu)
                    .step(Map.of("w", p), Map.of("w", p), 1e-3));
    assertTrue(e.getMessage().contains("is not on"), e.getMessage());
  }

  /** 100 tensors of 1 to 12 289 elements: three tables, blocks cut mid-tensor and at its end. */
  private static List<Tensor> manyTensors(int seed) {
    int[] sizes = {1, 7, 4095, 4096, 4097, 8192, 12_289, 333};
    List<Tensor> out = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      out.add(RandomWeights.uniform(seed + i, 1f, sizes[i % sizes.length]));
    }
    return out;
  }

  @Test
  void manyTensorsStepInFewLaunchesAsOneAtATimeOnTheCpu() {
    CudaBackend gpu = Gpu.backend();
    CpuBackend cpu = new CpuBackend();
    Backend.AdamWStep step = new Backend.AdamWStep(0.999f, 1e-3f, 0.1f, 0.99f, 0.01f, 0.3f, 1e-8f);
    List<Tensor> p = manyTensors(1), g = manyTensors(200), m = manyTensors(400);
    List<Tensor> v = manyTensors(600).stream().map(t -> cpu.mul(t, t)).toList();
    List<Backend.AdamWTensors> onHost = new ArrayList<>(), onGpu = new ArrayList<>();
    for (int i = 0; i < p.size(); i++) {
      onHost.add(new Backend.AdamWTensors(p.get(i), g.get(i), m.get(i), v.get(i)));
      onGpu.add(
          new Backend.AdamWTensors(
              gpu.upload(p.get(i), DType.F32),
              gpu.upload(g.get(i), DType.F32),
              gpu.upload(m.get(i), DType.F32),
              gpu.upload(v.get(i), DType.F32)));
    }
    cpu.adamw(onHost, 0.37f, step);
    gpu.adamw(onGpu, 0.37f, step);
    for (int i = 0; i < onHost.size(); i++) {
      Backend.AdamWTensors want = onHost.get(i), got = onGpu.get(i);
      assertArrayEquals(
          want.parameter().toFloatArray(), gpu.download(got.parameter()).toFloatArray(), "p" + i);
      assertArrayEquals(want.m().toFloatArray(), gpu.download(got.m()).toFloatArray(), "m" + i);
      assertArrayEquals(want.v().toFloatArray(), gpu.download(got.v()).toFloatArray(), "v" + i);
    }
  }

  @Test
  void sumsOfSquaresOfManyTensorsAreTheHostsWithinF32() {
    CudaBackend gpu = Gpu.backend();
    List<Tensor> host = manyTensors(3);
    float[] got =
        gpu.download(gpu.sumsOfSquares(host.stream().map(t -> gpu.upload(t, DType.F32)).toList()))
            .toFloatArray();
    assertEquals(host.size(), got.length);
    for (int i = 0; i < host.size(); i++) {
      double want = 0;
      for (float x : host.get(i).toFloatArray()) {
        want += (double) x * x;
      }
      assertEquals(want, got[i], 1e-6 * want, "tensor " + i);
    }
  }
}

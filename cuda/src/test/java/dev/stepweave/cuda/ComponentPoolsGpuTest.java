package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.memory.MemoryBudget;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.cuda.memory.DeviceTensors;
import dev.stepweave.cuda.memory.VirtualMemoryPool;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.ComponentMemory;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.RandomWeights;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Component weight pools on the device: the tiny golden model's weights, each component in its own
 * {@link VirtualMemoryPool} and accounted exactly; sleeping a component gives its physical memory
 * back and a generation after waking is bit-identical; the admission budget made from the device.
 */
@Tag("gpu")
class ComponentPoolsGpuTest {
  private static final Path TINY =
      Path.of(System.getProperty("stepweave.golden", "testdata/golden"), "wan21-tiny");

  /**
   * {@code gpu} behind a proxy that records the tensors each component's load uploads (one by one,
   * or stacked: a stack is one tensor of the pool).
   */
  private static Backend recording(CudaBackend gpu, Map<String, List<Tensor>> made) {
    String[] loading = {null};
    return (Backend)
        Proxy.newProxyInstance(
            Backend.class.getClassLoader(),
            new Class<?>[] {Backend.class},
            (proxy, method, args) -> {
              String outer = loading[0];
              if (method.getName().equals("loadingComponent")) {
                loading[0] = (String) args[0];
              }
              try {
                Object result = method.invoke(gpu, args);
                boolean uploads =
                    method.getName().equals("upload") || method.getName().equals("uploadStacked");
                if (uploads && loading[0] != null) {
                  made.computeIfAbsent(loading[0], k -> new ArrayList<>()).add((Tensor) result);
                }
                return result;
              } catch (InvocationTargetException e) {
                throw e.getCause();
              } finally {
                loading[0] = outer;
              }
            });
  }

  private static float[] generate(WanModel model) throws Exception {
    // The same prompt encodes again only when its cached embedding is gone.
    model.textEmbeddingCache().invalidate(key -> true);
    Request request =
        Request.text(
            TaskType.T2V,
            "a red ball bouncing",
            new DiffusionParams(
                3, 5.0, 42, 32, 32, 9, 8, "blurry", Optional.empty(), Optional.empty()));
    try (Engine engine = new Engine(model)) {
      return engine
          .submit(request)
          .result()
          .get(300, TimeUnit.SECONDS)
          .artifact(Artifact.VideoArtifact.class)
          .frames()
          .toFloatArray();
    }
  }

  @Test
  void eachComponentsWeightsLiveInItsOwnPoolAccountedExactly() {
    CudaBackend gpu = Gpu.backend();
    Map<String, List<Tensor>> made = new LinkedHashMap<>();
    WanModel model = WanModel.load(TINY, recording(gpu, made));
    List<String> tags = new ArrayList<>();
    long held = 0;
    try {
      Map<String, ComponentMemory> memory = model.componentMemory();
      assertEquals(WanModel.WEIGHT_COMPONENTS, List.copyOf(memory.keySet()));
      for (String component : WanModel.WEIGHT_COMPONENTS) {
        String tag = model.instanceId() + "/" + component;
        tags.add(tag);
        VirtualMemoryPool pool = gpu.componentPool(tag);
        List<Tensor> tensors = made.get(tag);
        long bytes = 0;
        for (Tensor t : tensors) {
          assertEquals(gpu.device(), t.device());
          assertTrue(pool.contains(DeviceTensors.address(t)), t + " is outside " + tag);
          for (String other : tags.subList(0, tags.size() - 1)) {
            assertFalse(gpu.componentPool(other).contains(DeviceTensors.address(t)));
          }
          bytes += t.byteSize();
        }
        ComponentMemory m = memory.get(component);
        long chunk = pool.chunkBytes();
        System.out.printf(
            "  %s: %d tensors, %d bytes; pool uses %d, holds %d (chunks of %d)%n",
            component, tensors.size(), bytes, m.usedBytes(), m.reservedBytes(), chunk);
        assertFalse(m.asleep());
        assertEquals(m.reservedBytes(), gpu.reservedBytes(tag));
        // Every pool allocation is one of these tensors, each started on a 256-byte boundary.
        assertTrue(m.usedBytes() >= bytes, component + ": uses less than its tensors");
        assertTrue(m.usedBytes() < bytes + 256L * tensors.size(), component + ": uses more");
        // Physical memory: whole chunks, fewer than one chunk beyond what is used.
        assertEquals(0, m.reservedBytes() % chunk);
        assertTrue(m.reservedBytes() >= m.usedBytes());
        assertTrue(m.reservedBytes() < m.usedBytes() + chunk);
        held += m.reservedBytes();
      }
    } catch (RuntimeException | AssertionError e) {
      model.close();
      throw e;
    }
    long free = gpu.context().memoryInfo()[0];
    model.close();
    long freed = gpu.context().memoryInfo()[0] - free;
    assertTrue(freed >= held, "closing gave back " + freed + " of " + held + " bytes");
    for (String tag : tags) {
      assertThrows(IllegalArgumentException.class, () -> gpu.componentPool(tag));
    }
  }

  @Test
  void sleepingReleasesAComponentsMemoryAndWakingRestoresItBitForBit() throws Exception {
    CudaBackend gpu = Gpu.backend();
    try (WanModel model = WanModel.load(TINY, gpu)) {
      generate(model); // warm-up: kernels loaded, the DiT's graph recorded
      float[] reference = generate(model);
      Map<String, ComponentMemory> awake = model.componentMemory();
      long held = awake.values().stream().mapToLong(ComponentMemory::reservedBytes).sum();
      long free = gpu.context().memoryInfo()[0];
      WanModel.WEIGHT_COMPONENTS.forEach(model::sleep);
      long freed = gpu.context().memoryInfo()[0] - free;
      System.out.printf("  sleep gave back %d of %d bytes%n", freed, held);
      assertTrue(freed >= held, "sleep gave back " + freed + " of " + held + " bytes");
      model
          .componentMemory()
          .forEach(
              (component, m) -> {
                ComponentMemory before = awake.get(component);
                assertTrue(m.asleep(), component);
                assertEquals(0, m.reservedBytes(), component);
                assertEquals(before.reservedBytes(), m.awakeBytes(), component);
                assertEquals(before.usedBytes(), m.usedBytes(), component);
              });
      // Each component wakes when the generation first uses it, at the same addresses (the
      // recorded graph replays on them).
      assertArrayEquals(reference, generate(model), "frames after sleep and wake");
      assertEquals(awake, model.componentMemory());
      // Explicitly too.
      model.sleep("vae");
      assertTrue(model.componentMemory().get("vae").asleep());
      model.wake("vae");
      assertEquals(awake, model.componentMemory());
    }
  }

  @Test
  void aWeightsBf16CopyJoinsItsPoolAndSleepsWithIt() {
    CudaBackend gpu = Gpu.backend();
    String tag = "probe-" + System.nanoTime();
    Tensor data = RandomWeights.uniform(3, 1f, 1000, 300);
    Tensor w = gpu.loadingComponent(tag, () -> gpu.upload(data, DType.F32));
    VirtualMemoryPool pool = gpu.componentPool(tag);
    try {
      long used = pool.usedBytes();
      Tensor copy = gpu.tensors().emptyBeside(w, DType.BF16, w.shape());
      gpu.tensors().copy(w, copy);
      assertTrue(pool.contains(DeviceTensors.address(copy)));
      assertTrue(pool.usedBytes() >= used + copy.byteSize());
      Tensor loose = gpu.upload(data, DType.F32);
      assertFalse(
          pool.contains(DeviceTensors.address(gpu.tensors().emptyBeside(loose, DType.BF16, 4))));
      float[] expected = gpu.download(copy).toFloatArray();
      gpu.sleepComponent(tag);
      assertEquals(0, gpu.reservedBytes(tag));
      var e =
          assertThrows(
              IllegalStateException.class,
              () -> gpu.tensors().emptyBeside(w, DType.BF16, w.shape()));
      assertTrue(e.getMessage().contains("asleep"), e.getMessage());
      gpu.wakeComponent(tag);
      assertArrayEquals(data.toFloatArray(), gpu.download(w).toFloatArray());
      assertArrayEquals(expected, gpu.download(copy).toFloatArray());
    } finally {
      gpu.releaseComponent(tag);
    }
  }

  @Test
  void theAdmissionBudgetComesFromTheDevice() {
    CudaBackend gpu = Gpu.backend();
    try (WanModel model = WanModel.load(TINY, gpu)) {
      MemoryBudget b = MemoryBudget.measure(model, OptionalLong.empty()).orElseThrow();
      System.out.println("  " + b.describe());
      long total = gpu.context().memoryInfo()[1];
      assertEquals(total, b.deviceBytes());
      assertEquals(MemoryBudget.defaultHeadroom(total), b.headroomBytes());
      assertTrue(b.components().containsAll(model.componentMemory().values()));
      assertTrue(b.outsideBytes() > 0, "the driver's context holds device memory of its own");
      assertEquals(
          total - b.componentBytes() - b.outsideBytes() - b.headroomBytes(), b.requestBytes());
      assertTrue(b.requestBytes() > 0);
    }
  }
}

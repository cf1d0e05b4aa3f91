package dev.stepweave.models.wan.vae;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Storage;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.Weights;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Deque;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The VAE tells the backend which tensors outlive each step ({@link Backend#stepMemory}, {@link
 * Backend#chain}'s {@code alsoKept}), and a device backend reuses all the others at once. Here the
 * VAE runs on a CPU backend that releases exactly as the CUDA backend does, except that a released
 * tensor is overwritten with NaN instead of reused: were any of them still read, results would
 * change. Encode and decode (tiled or not) must stay bit-identical to the plain CPU backend, really
 * release, and hold no more than the frames and the causal caches between steps.
 */
class ReleaseDisciplineTest {
  private static final Path GOLDEN = Path.of(System.getProperty("stepweave.golden"));

  private static CpuBackend cpu;
  private static SafetensorsFile weightsFile;
  private static SafetensorsFile expected;
  private static WanVae plain;
  private static Poisoning poisoning;
  private static WanVae released;
  private static SafetensorsFile residualWeightsFile;
  private static SafetensorsFile residualExpected;
  private static WanVae residualPlain;
  private static WanVae residualReleased;

  @BeforeAll
  static void load() {
    cpu = new CpuBackend(2);
    poisoning = new Poisoning(cpu);
    Path dir = GOLDEN.resolve("wan21-tiny/vae");
    weightsFile = SafetensorsFile.open(dir.resolve("diffusion_pytorch_model.safetensors"));
    expected = SafetensorsFile.open(GOLDEN.resolve("wan21-tiny-expected/vae.safetensors"));
    WanVaeConfig config = WanVaeConfig.read(dir.resolve("config.json"));
    plain = WanVae.load(config, new Weights(weightsFile, cpu, DType.F32));
    released = WanVae.load(config, new Weights(weightsFile, poisoning.backend(), DType.F32));
    Path residualDir = GOLDEN.resolve("wan22-ti2v-tiny/vae");
    residualWeightsFile =
        SafetensorsFile.open(residualDir.resolve("diffusion_pytorch_model.safetensors"));
    residualExpected =
        SafetensorsFile.open(GOLDEN.resolve("wan22-ti2v-tiny-expected/vae.safetensors"));
    WanVaeConfig residual = WanVaeConfig.read(residualDir.resolve("config.json"));
    residualPlain = WanVae.load(residual, new Weights(residualWeightsFile, cpu, DType.F32));
    residualReleased =
        WanVae.load(residual, new Weights(residualWeightsFile, poisoning.backend(), DType.F32));
  }

  @AfterAll
  static void close() {
    expected.close();
    weightsFile.close();
    residualExpected.close();
    residualWeightsFile.close();
  }

  @Test
  void encodeReleasesOnlyDeadTensors() {
    Tensor video = cpu.upload(expected.load("video"), DType.F32);
    float[] before = video.toFloatArray();
    long poisoned = poisoning.poisonedBytes();
    long releasedNow = poisoning.releasedNowBytes();
    Posterior a = plain.encode(video);
    Posterior b = released.encode(video);
    assertArrayEquals(a.mean().toFloatArray(), b.mean().toFloatArray());
    assertArrayEquals(a.logvar().toFloatArray(), b.logvar().toFloatArray());
    assertArrayEquals(before, video.toFloatArray(), "the input is never released");
    assertTrue(poisoning.poisonedBytes() > poisoned, "nothing was released");
    assertTrue(poisoning.releasedNowBytes() > releasedNow, "no replaced tail was freed at once");
  }

  @Test
  void untiledDecodeHoldsOnlyItsFramesAndCaches() {
    Tensor z = randomLatents(new Random(3), 1, 16, 6, 4, 4);
    float[] latents = z.toFloatArray();
    DecodeState state = released.startDecode(z);
    Poisoning.Held memory = poisoning.lastMemory();
    long releasedNow = poisoning.releasedNowBytes();
    List<Long> overhead = new ArrayList<>();
    while (!state.isDone()) {
      released.step(state);
      // What the state holds beyond its frames: the causal caches (and nothing else when untiled).
      overhead.add(memory.bytes() - bytes(state.decoded()));
    }
    for (int step = 2; step < overhead.size() - 1; step++) {
      assertEquals(overhead.get(1), overhead.get(step), "held beyond the frames after each step");
    }
    assertTrue(overhead.get(1) > 0, "the caches are held");
    assertEquals(0, overhead.getLast(), "a finished decode holds its frames only");
    assertArrayEquals(
        plain.decode(z).toFloatArray(), cpu.download(released.finish(state)).toFloatArray());
    assertArrayEquals(latents, z.toFloatArray(), "the latents are never released");
    // Every step after the second replaces every cache slot's tail, during the step.
    assertTrue(
        poisoning.releasedNowBytes() - releasedNow >= 3L * overhead.get(1),
        "replaced tails freed during their steps: "
            + (poisoning.releasedNowBytes() - releasedNow)
            + " B over "
            + overhead.size()
            + " steps");
    state.release();
    assertEquals(0, memory.bytes(), "a released decode holds nothing");
  }

  @Test
  void tiledDecodeReleasesOnlyDeadTensors() {
    Tensor z = randomLatents(new Random(4), 1, 16, 3, 5, 4);
    DecodeTiling tiles = new DecodeTiling(24, 24);
    long poisoned = poisoning.poisonedBytes();
    long releasedNow = poisoning.releasedNowBytes();
    DecodeState state = released.startDecode(z, tiles);
    Poisoning.Held memory = poisoning.lastMemory();
    while (!state.isDone()) {
      released.step(state);
    }
    assertEquals(bytes(state.decoded()), memory.bytes(), "a finished decode holds its frames only");
    assertArrayEquals(
        plain.decode(z).toFloatArray(), cpu.download(released.finish(state)).toFloatArray());
    assertTrue(poisoning.poisonedBytes() > poisoned, "nothing was released");
    assertTrue(poisoning.releasedNowBytes() > releasedNow, "no replaced tail was freed at once");
  }

  @Test
  void goldenDecodeStaysBitIdentical() {
    Tensor z = cpu.upload(expected.load("z"), DType.F32);
    assertArrayEquals(
        plain.decode(z).toFloatArray(), cpu.download(released.decode(z)).toFloatArray());
  }

  @Test
  void theResidualVaeReleasesOnlyDeadTensorsEncodingAndDecoding() {
    Tensor video = cpu.upload(residualExpected.load("video"), DType.F32);
    long poisoned = poisoning.poisonedBytes();
    Posterior a = residualPlain.encode(video);
    Posterior b = residualReleased.encode(video);
    assertArrayEquals(a.mean().toFloatArray(), b.mean().toFloatArray());
    assertArrayEquals(a.logvar().toFloatArray(), b.logvar().toFloatArray());
    Tensor z = cpu.upload(residualExpected.load("z"), DType.F32);
    float[] decoded = residualPlain.decode(z).toFloatArray();
    DecodeState state = residualReleased.startDecode(z, new DecodeTiling(32, 48));
    Poisoning.Held memory = poisoning.lastMemory();
    while (!state.isDone()) {
      residualReleased.step(state);
    }
    assertEquals(bytes(state.decoded()), memory.bytes(), "a finished decode holds its frames only");
    assertArrayEquals(decoded, cpu.download(residualReleased.finish(state)).toFloatArray());
    assertArrayEquals(decoded, cpu.download(residualReleased.decode(z)).toFloatArray());
    assertTrue(poisoning.poisonedBytes() > poisoned, "nothing was released");
  }

  private static long bytes(Collection<Tensor> tensors) {
    return tensors.stream().mapToLong(t -> t.storage().byteSize()).sum();
  }

  private static Tensor randomLatents(Random random, int... shape) {
    float[] values = new float[(int) Tensor.numel(shape)];
    for (int i = 0; i < values.length; i++) {
      values[i] = (float) random.nextGaussian();
    }
    return Tensor.of(values, shape);
  }

  /**
   * A CPU backend that mimics the CUDA backend's lifetimes: it records every tensor an operation
   * allocates while a scope (a {@code scoped} or {@code chain} call, or a {@link
   * Backend.StepMemory} step) is open, and where the CUDA backend would hand a tensor's memory back
   * it fills it with NaN bits instead.
   */
  private static final class Poisoning implements InvocationHandler {
    private final Backend cpu;
    private final Deque<List<Storage>> scopes = new ArrayDeque<>();
    private Held lastMemory;
    private long poisonedBytes;
    private long releasedNowBytes;

    Poisoning(Backend cpu) {
      this.cpu = cpu;
    }

    Backend backend() {
      return (Backend)
          Proxy.newProxyInstance(
              Backend.class.getClassLoader(), new Class<?>[] {Backend.class}, this);
    }

    Held lastMemory() {
      return lastMemory;
    }

    long poisonedBytes() {
      return poisonedBytes;
    }

    /** What {@link Backend.StepMemory#releaseNow} released, of {@link #poisonedBytes}. */
    long releasedNowBytes() {
      return releasedNowBytes;
    }

    /** The memory of one state across its steps, as CUDA's allocator holds it. */
    final class Held implements Backend.StepMemory {
      private List<Storage> kept = new ArrayList<>();

      @Override
      public void step(Runnable body, Supplier<? extends Collection<Tensor>> survivors) {
        scopes.push(new ArrayList<>());
        try {
          body.run();
        } catch (RuntimeException | Error e) {
          handToEnclosing(scopes.pop()); // a failed step releases nothing
          throw e;
        }
        List<Storage> made = scopes.pop();
        List<Storage> candidates = new ArrayList<>(kept);
        candidates.addAll(made);
        kept = releaseExcept(candidates, survivors.get());
      }

      /** As the CUDA backend: the block is given back now, wherever it was collected. */
      @Override
      public void releaseNow(Tensor dead) {
        Storage s = dead.storage();
        kept.removeIf(k -> k == s);
        scopes.forEach(scope -> scope.removeIf(k -> k == s));
        s.segment().fill((byte) 0xFF);
        poisonedBytes += s.byteSize();
        releasedNowBytes += s.byteSize();
      }

      long bytes() {
        return kept.stream().mapToLong(Storage::byteSize).sum();
      }
    }

    @Override
    @SuppressWarnings("unchecked")
    public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
      switch (method.getName()) {
        case "stepMemory" -> {
          lastMemory = new Held();
          return lastMemory;
        }
        case "scoped" -> {
          return inScope(
              () -> {
                Tensor out = ((Supplier<Tensor>) args[0]).get();
                releaseInScope(List.of(out));
                return out;
              });
        }
        case "chain" -> {
          Supplier<? extends Collection<Tensor>> alsoKept =
              args.length == 5 ? (Supplier<? extends Collection<Tensor>>) args[4] : List::of;
          return inScope(() -> chain(args, alsoKept));
        }
        default -> {
          Object out = call(method, args);
          if (out instanceof Tensor t && !scopes.isEmpty() && !isArgument(t, args)) {
            scopes.peek().add(t.storage());
          }
          return out;
        }
      }
    }

    private Tensor chain(Object[] args, Supplier<? extends Collection<Tensor>> alsoKept) {
      Tensor h = (Tensor) args[0];
      Backend.ChainStep step = (Backend.ChainStep) args[3];
      for (int i = (int) args[1]; i < (int) args[2]; i++) {
        h = step.apply(i, h);
        List<Tensor> keep = new ArrayList<>(alsoKept.get());
        keep.add(h);
        releaseInScope(keep);
      }
      return h;
    }

    /** Releases what the innermost scope holds but {@code keep}; the kept stay in it. */
    private void releaseInScope(Collection<Tensor> keep) {
      List<Storage> kept = releaseExcept(scopes.peek(), keep);
      scopes.peek().clear();
      scopes.peek().addAll(kept);
    }

    /** Runs {@code body} in a new scope, then hands what is left in it to the enclosing one. */
    private Tensor inScope(Supplier<Tensor> body) {
      scopes.push(new ArrayList<>());
      try {
        return body.get();
      } finally {
        handToEnclosing(scopes.pop());
      }
    }

    private void handToEnclosing(List<Storage> left) {
      if (!scopes.isEmpty()) {
        scopes.peek().addAll(left);
      }
    }

    /**
     * Poisons every storage of {@code candidates} that no tensor of {@code keep} views; returns the
     * kept candidates (each once).
     */
    private List<Storage> releaseExcept(List<Storage> candidates, Collection<Tensor> keep) {
      Set<Storage> alive = Collections.newSetFromMap(new IdentityHashMap<>());
      keep.forEach(t -> alive.add(t.storage()));
      Set<Storage> seen = Collections.newSetFromMap(new IdentityHashMap<>());
      List<Storage> kept = new ArrayList<>();
      for (Storage s : candidates) {
        if (!seen.add(s)) {
          continue;
        }
        if (alive.contains(s)) {
          kept.add(s);
        } else {
          s.segment().fill((byte) 0xFF); // NaN in every float format
          poisonedBytes += s.byteSize();
        }
      }
      return kept;
    }

    /** Whether {@code t} views the memory of an input (an operation may return its input). */
    private static boolean isArgument(Tensor t, Object[] args) {
      if (args == null) {
        return false;
      }
      for (Object a : args) {
        if (a instanceof Tensor in && in.storage() == t.storage()) {
          return true;
        }
        if (a instanceof List<?> list) {
          for (Object o : list) {
            if (o instanceof Tensor in && in.storage() == t.storage()) {
              return true;
            }
          }
        }
      }
      return false;
    }

    private Object call(Method method, Object[] args) throws Throwable {
      try {
        return method.invoke(cpu, args);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
    }
  }
}

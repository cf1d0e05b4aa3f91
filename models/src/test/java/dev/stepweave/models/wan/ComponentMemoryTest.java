package dev.stepweave.models.wan;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.CheckpointException;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How the Wan model uses its backend's component pools: each component's weights are loaded inside
 * {@code loadingComponent} under a tag of its own, a sleeping component wakes when it is used (and
 * only then: reading configurations or a request's footprint wakes nothing), and closing or a
 * failed load releases the pools. Checked on the CPU through a backend that records those calls.
 */
class ComponentMemoryTest {
  private static final Path TINY = Path.of(System.getProperty("stepweave.golden"), "wan21-tiny");

  @TempDir Path tmp;

  /** The CPU backend, recording the component calls and whether each upload ran inside a load. */
  static final class Recording {
    final List<String> calls = Collections.synchronizedList(new ArrayList<>());
    final List<String> uploadsBy = Collections.synchronizedList(new ArrayList<>());
    private String loading;
    final Backend backend;

    Recording() {
      CpuBackend cpu = new CpuBackend(1);
      backend =
          (Backend)
              Proxy.newProxyInstance(
                  Backend.class.getClassLoader(),
                  new Class<?>[] {Backend.class},
                  (proxy, method, args) -> {
                    String name = method.getName();
                    switch (name) {
                      case "loadingComponent" -> {
                        calls.add("load " + args[0]);
                        String outer = loading;
                        loading = (String) args[0];
                        try {
                          return invoke(method, cpu, args);
                        } finally {
                          loading = outer;
                        }
                      }
                      case "sleepComponent", "wakeComponent", "releaseComponent" ->
                          calls.add(name.replace("Component", "") + " " + args[0]);
                      case "upload" -> uploadsBy.add(String.valueOf(loading));
                      default -> {}
                    }
                    return invoke(method, cpu, args);
                  });
    }

    private static Object invoke(java.lang.reflect.Method m, Object target, Object[] args)
        throws Throwable {
      try {
        return m.invoke(target, args);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
    }

    List<String> drain() {
      List<String> out = List.copyOf(calls);
      calls.clear();
      return out;
    }
  }

  private static Request request() {
    return Request.text(
        TaskType.T2V,
        "a red ball",
        new DiffusionParams(2, 5.0, 7, 32, 32, 5, 8, "", Optional.empty(), Optional.empty()));
  }

  private static float[] generate(WanModel model) throws Exception {
    try (Engine engine = new Engine(model)) {
      return engine
          .submit(request())
          .result()
          .get(120, TimeUnit.SECONDS)
          .artifact(Artifact.VideoArtifact.class)
          .frames()
          .toFloatArray();
    }
  }

  @Test
  void eachComponentLoadsIntoItsOwnTagAndEveryWeightIsMadeInsideItsLoad() {
    Recording r = new Recording();
    try (WanModel model = WanModel.load(TINY, r.backend)) {
      String id = model.instanceId();
      // The transformer last: it loads once the rest shows what is left of the device.
      assertEquals(
          List.of(
              "load " + id + "/text_encoder", "load " + id + "/vae", "load " + id + "/transformer"),
          r.drain());
      for (String component : WanModel.WEIGHT_COMPONENTS) {
        assertTrue(
            r.uploadsBy.contains(id + "/" + component), "no weight uploaded for " + component);
      }
      assertTrue(
          r.uploadsBy.stream().allMatch(tag -> tag.startsWith(id + "/")),
          "an upload outside any component's load: " + r.uploadsBy);
      // The CPU pools nothing, so there is nothing to report.
      assertEquals(java.util.Map.of(), model.componentMemory());
    }
    assertEquals(3, r.calls.stream().filter(c -> c.startsWith("release ")).count());
  }

  @Test
  void aSleepingComponentWakesWhenUsedAndOnlyThen() throws Exception {
    Recording r = new Recording();
    try (WanModel model = WanModel.load(TINY, r.backend)) {
      String id = model.instanceId();
      float[] before = generate(model);
      model.sleep("transformer");
      model.sleep("text_encoder");
      r.drain();
      // Admission and configuration reads run on any thread: they must not wake anything.
      model.footprint(request());
      model.validate(request());
      model.transformerConfig();
      model.textEncoderConfig();
      model.vaeConfig();
      assertEquals(List.of(), r.drain());
      model.transformer();
      assertEquals(List.of("wake " + id + "/transformer"), r.drain());
      // Forget the prompt's embedding, so the text encoder runs again.
      model.textEmbeddingCache().invalidate(key -> true);
      assertArrayEquals(before, generate(model), "frames after sleeping and waking");
      List<String> woken = r.drain();
      assertTrue(woken.contains("wake " + id + "/text_encoder"), woken.toString());
      assertTrue(woken.contains("wake " + id + "/vae"), woken.toString());
      assertTrue(woken.stream().allMatch(c -> c.startsWith("wake ")), woken.toString());
      var e = assertThrows(IllegalArgumentException.class, () -> model.sleep("tokenizer"));
      assertTrue(e.getMessage().contains("keeps no weights for 'tokenizer'"), e.getMessage());
    }
    assertEquals(
        List.of("release ", "release ", "release "),
        r.drain().stream().map(c -> c.substring(0, c.indexOf(' ') + 1)).toList());
  }

  @Test
  void closingAndAFailedLoadReleaseEveryComponent() throws IOException {
    Recording r = new Recording();
    WanModel model = WanModel.load(TINY, r.backend);
    String id = model.instanceId();
    r.drain();
    model.close();
    assertEquals(
        List.of(
            "release " + id + "/text_encoder",
            "release " + id + "/transformer",
            "release " + id + "/vae"),
        r.drain());

    // A transformer whose text_dim disagrees with the text encoder fails before it loads.
    Path broken = copy(TINY, tmp.resolve("broken"));
    Path config = broken.resolve("transformer/config.json");
    Files.writeString(
        config, Files.readString(config).replace("\"text_dim\": 24", "\"text_dim\": 25"));
    assertThrows(CheckpointException.class, () -> WanModel.load(broken, r.backend));
    List<String> calls = r.drain();
    // The text encoder and the VAE loaded; what they hold is released.
    assertEquals(2, calls.stream().filter(c -> c.startsWith("load ")).count(), calls.toString());
    String loaded = calls.get(1).substring("load ".length());
    String prefix = loaded.substring(0, loaded.indexOf('/') + 1);
    assertEquals(
        List.of(
            "release " + prefix + "text_encoder",
            "release " + prefix + "transformer",
            "release " + prefix + "vae"),
        calls.subList(2, calls.size()));
  }

  private static Path copy(Path from, Path to) throws IOException {
    try (Stream<Path> files = Files.walk(from)) {
      for (Path p : files.toList()) {
        Path target = to.resolve(from.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(target);
        } else {
          Files.copy(p, target);
        }
      }
    }
    return to;
  }
}

package dev.stepweave.models.wan.lora;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.extend.AdapterRegistry;
import dev.stepweave.core.extend.InvalidAdapterException;
import dev.stepweave.core.extend.ResolvedAdapter;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The adapter cache: a held adapter is never evicted; an unheld one goes once over budget. */
class WanAdaptersTest {
  static final Path CHECKPOINT = Path.of(System.getProperty("stepweave.golden"), "wan21-lora-tiny");
  private static WanModel model;

  @BeforeAll
  static void load() {
    model = WanModel.load(CHECKPOINT, new CpuBackend());
  }

  @AfterAll
  static void close() {
    model.close();
  }

  private static ResolvedAdapter resolved(AdapterRegistry r, String name) {
    return new ResolvedAdapter(r.get(name).orElseThrow(), 1.0);
  }

  @Test
  void heldAdaptersStayAndUnheldOnesAreEvictedOverBudget() {
    AdapterRegistry registry =
        AdapterRegistry.open(
            model::inspectAdapter,
            Map.of(
                "a", CHECKPOINT.resolve("loras/adapter_a_diffusers.safetensors"),
                "b", CHECKPOINT.resolve("loras/adapter_b_wan_original.safetensors")),
            List.of());
    // A budget of zero bytes: only held adapters may stay.
    WanAdapters cache =
        new WanAdapters("m", model.backend(), model.transformer()::adaptableLayers, 0);
    WanAdapters.Held a = cache.acquire(resolved(registry, "a"));
    WanAdapters.Held b = cache.acquire(resolved(registry, "b"));
    assertEquals(2, cache.metrics().entries());
    WanAdapters.Held aAgain = cache.acquire(resolved(registry, "a"));
    assertSame(a.adapter(), aAgain.adapter(), "a held adapter is shared, not reloaded");
    assertEquals(2, cache.loadStats().loads());
    a.close();
    assertEquals(2, cache.metrics().entries(), "still held once");
    aAgain.close();
    assertEquals(1, cache.metrics().entries(), "a is evicted once nobody holds it");
    WanAdapters.Held reloaded = cache.acquire(resolved(registry, "a"));
    assertNotEquals(
        a.adapter().identity(), reloaded.adapter().identity(), "a new load is a new identity");
    assertEquals(3, cache.loadStats().loads());
    b.close();
    reloaded.close();
    assertEquals(0, cache.metrics().entries());
    assertTrue(cache.metrics().evictions() >= 2);
  }

  @Test
  void aFileRewrittenAfterRegistrationIsRefusedWhenItLoads(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("a.safetensors");
    Files.copy(CHECKPOINT.resolve("loras/adapter_a_diffusers.safetensors"), file);
    AdapterRegistry registry = AdapterRegistry.open(model::inspectAdapter, Map.of(), List.of(dir));
    Files.copy(
        CHECKPOINT.resolve("loras/adapter_b_wan_original.safetensors"),
        file,
        java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    WanAdapters cache =
        new WanAdapters("m", model.backend(), model.transformer()::adaptableLayers, 1 << 20);
    var e =
        assertThrows(InvalidAdapterException.class, () -> cache.acquire(resolved(registry, "a")));
    assertEquals(file + ": changed since it was registered (rescan the adapters)", e.getMessage());
  }
}

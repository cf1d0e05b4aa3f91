package dev.stepweave.models.wan.lora;

import dev.stepweave.core.cache.CacheKey;
import dev.stepweave.core.cache.EvictionPolicy;
import dev.stepweave.core.cache.FeatureCache;
import dev.stepweave.core.extend.AdapterInfo;
import dev.stepweave.core.extend.InvalidAdapterException;
import dev.stepweave.core.extend.ResolvedAdapter;
import dev.stepweave.models.wan.lora.AdapterLayout.LayerKeys;
import dev.stepweave.models.wan.transformer.LayerUpdate;
import dev.stepweave.models.wan.transformer.LinearShape;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.CheckpointException;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.TensorSource;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * A Wan model's adapters: reading files against its transformer ({@link #inspect}) and the
 * byte-budgeted host → device cache of loaded ones (design §7.1: adapters are their own cache
 * class). Entries are keyed by the adapter's name and content version and reference-counted: an
 * adapter a running request holds is never evicted, the least recently used unheld ones go first
 * once the budget is exceeded. The base weights are never touched.
 */
public final class WanAdapters {
  /** Device bytes of loaded adapters kept for reuse (a rank-32 1.3B adapter is ≈ 40 MB in BF16). */
  public static final long DEFAULT_BUDGET_BYTES = 2L << 30;

  private final String modelId;
  private final Backend backend;
  private final Supplier<Map<String, LinearShape>> layers;
  private final FeatureCache<LoraAdapter> cache;
  private final AtomicLong loads = new AtomicLong();
  private final AtomicLong loadNanos = new AtomicLong();

  /**
   * @param layers the transformer's adaptable layers (read lazily: reading them wakes nothing)
   */
  public WanAdapters(
      String modelId,
      Backend backend,
      Supplier<Map<String, LinearShape>> layers,
      long budgetBytes) {
    this.modelId = modelId;
    this.backend = backend;
    this.layers = layers;
    this.cache = new FeatureCache<>(budgetBytes, EvictionPolicy.LRU, LoraAdapter::byteSize);
  }

  /**
   * Reads {@code file}'s header against the transformer: its format, rank, targets and recipe.
   *
   * @throws InvalidAdapterException naming the file and the key or tensor that does not fit
   */
  public AdapterInfo inspect(Path file) {
    try (TensorSource source = open(file)) {
      AdapterLayout layout = WanLoraFormat.read(source, layers.get());
      return new AdapterInfo(
          layout.format(), layout.rank(source), layout.targets(), layout.recipe());
    }
  }

  /** A held adapter: its weights stay resident until {@link #close}. */
  public interface Held extends AutoCloseable {
    dev.stepweave.models.wan.transformer.LayerAdapter adapter();

    @Override
    void close();
  }

  /**
   * The adapter's weights on the backend, loading them on a miss. Call from outside any forward
   * (the weights must outlive every recording that reads them).
   */
  public Held acquire(ResolvedAdapter resolved) {
    var a = resolved.adapter();
    CacheKey key =
        CacheKey.builder(modelId, "transformer")
            .adapters(Map.of(a.name(), a.sha256()))
            .precision(dev.stepweave.tensor.Precision.of(backend.activationDType()).wireName())
            .build();
    FeatureCache.Lease<LoraAdapter> lease =
        cache.acquire(key, () -> load(a.name() + "@" + a.version(), a.file(), a.sha256()));
    return new Held() {
      @Override
      public dev.stepweave.models.wan.transformer.LayerAdapter adapter() {
        return lease.value();
      }

      @Override
      public void close() {
        lease.close();
      }
    };
  }

  /** The cache's counters (hits, misses, evictions, resident bytes). */
  public dev.stepweave.core.cache.CacheMetrics metrics() {
    return cache.metrics();
  }

  /** Adapters loaded host → device so far, and the time that took in total. */
  public record LoadStats(long loads, double totalMillis) {}

  public LoadStats loadStats() {
    return new LoadStats(loads.get(), loadNanos.get() / 1e6);
  }

  private LoraAdapter load(String name, Path file, String sha256) {
    long start = System.nanoTime();
    try (TensorSource source = open(file)) {
      String now = dev.stepweave.core.cache.ContentHash.ofFile(file);
      if (!now.equals(sha256)) {
        throw new InvalidAdapterException(
            file + ": changed since it was registered (rescan the adapters)");
      }
      AdapterLayout layout = WanLoraFormat.read(source, layers.get());
      DType dtype = backend.activationDType();
      Map<String, LayerUpdate> updates = new LinkedHashMap<>();
      layout
          .layers()
          .forEach(
              (layer, k) -> updates.put(layer, update(source, k, layers.get().get(layer), dtype)));
      long n = loads.incrementAndGet();
      loadNanos.addAndGet(System.nanoTime() - start);
      return new LoraAdapter(name + "#" + n, updates);
    } catch (java.io.IOException e) {
      throw new InvalidAdapterException(file + ": cannot read: " + e.getMessage());
    }
  }

  private LayerUpdate update(TensorSource source, LayerKeys k, LinearShape shape, DType dtype) {
    Tensor down = source.loadF32(k.down());
    Tensor up;
    if (k.up() == null) {
      // A full delta: the identity as the up factor, as the reference converter reads it.
      float[] eye = new float[shape.out() * shape.out()];
      for (int i = 0; i < shape.out(); i++) {
        eye[i * shape.out() + i] = 1f;
      }
      up = Tensor.of(eye, shape.out(), shape.out());
    } else {
      up = source.loadF32(k.up());
    }
    float scale = k.alphaScale();
    if (k.alpha() != null) {
      scale = source.loadF32(k.alpha()).toFloatArray()[0] / down.dim(0);
    }
    Tensor bias = k.bias() == null ? null : backend.upload(source.loadF32(k.bias()), dtype);
    return new LayerUpdate(backend.upload(down, dtype), backend.upload(up, dtype), scale, bias);
  }

  private static TensorSource open(Path file) {
    try {
      return SafetensorsFile.open(file);
    } catch (CheckpointException e) {
      throw new InvalidAdapterException(e.getMessage());
    }
  }
}

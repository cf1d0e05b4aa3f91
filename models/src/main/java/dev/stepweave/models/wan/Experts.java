package dev.stepweave.models.wan;

import dev.stepweave.core.loop.SwappedComponents;
import dev.stepweave.models.wan.transformer.WanTransformer;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.ComponentMemory;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * A Wan model's transformer experts — one, or Wan2.2 A14B's two — and how they share the device
 * ({@link ExpertChoice}). One awake at a time, they are the model's {@link SwappedComponents}:
 * making an expert awake first puts the other to sleep, so the two are never awake together, and
 * the engine orders the steps to switch rarely. Every method that changes which expert is awake
 * runs on the thread that runs the model's work.
 */
final class Experts implements SwappedComponents {
  // One 14B BF16 expert's pool (≈ 28.6 GB; 57.7 GB for both) parks in page-locked host memory in
  // 14.3 s and is restored in 3.9 s on an H200 (ExpertSwitchBench, docs/performance.md).
  private static final double PARK_BYTES_PER_MILLI = 28.6e9 / 14_300;
  private static final double RESTORE_BYTES_PER_MILLI = 28.6e9 / 3_900;

  private final ExpertRouting routing;
  private final Map<String, WanTransformerConfig> configs;
  private final Backend backend;
  private final String instanceId;
  // Replaced between engine ticks by a weight sync, read by the scheduler thread.
  private final Map<String, WanTransformer> loaded = new ConcurrentHashMap<>();
  private volatile ExpertChoice choice;
  private String awake; // one at a time: the expert awake, or null; guarded by this

  /**
   * @param configs each expert's configuration, by component id
   * @param instanceId the model instance whose pools ({@link WanModel#memoryTag}) hold the experts
   */
  Experts(
      ExpertRouting routing,
      Map<String, WanTransformerConfig> configs,
      Backend backend,
      String instanceId) {
    this.routing = routing;
    this.configs = Map.copyOf(configs);
    this.backend = backend;
    this.instanceId = instanceId;
  }

  /**
   * Loads every expert through {@code loader}, the second (low-noise) one first: one at a time, it
   * sleeps before the first loads, so the load never holds both awake and the first request's
   * high-noise steps find their expert awake.
   */
  synchronized void load(ExpertChoice choice, Function<String, WanTransformer> loader) {
    this.choice = choice;
    for (String id : routing.experts().reversed()) {
      loaded.put(id, loader.apply(id));
      if (oneAtATime() && !id.equals(ExpertRouting.FIRST)) {
        backend.sleepComponent(tag(id));
      }
    }
    awake = ExpertRouting.FIRST;
  }

  ExpertChoice choice() {
    return choice;
  }

  /** Whether the experts take turns on the device. */
  boolean oneAtATime() {
    return choice.residency() == ExpertResidency.ONE_AT_A_TIME;
  }

  /** Expert {@code id}'s configuration (reading it wakes nothing). */
  WanTransformerConfig config(String id) {
    known(id);
    return configs.get(id);
  }

  /** Expert {@code id} as loaded, awake or not: for what reads its structure, not its weights. */
  WanTransformer loaded(String id) {
    known(id);
    return loaded.get(id);
  }

  /** Expert {@code id}, awake: one at a time, the other one sleeps first. */
  synchronized WanTransformer awake(String id) {
    wake(id);
    return loaded(id);
  }

  /** Puts expert {@code id} to sleep. */
  synchronized void sleep(String id) {
    known(id);
    backend.sleepComponent(tag(id));
    if (id.equals(awake)) {
      awake = null;
    }
  }

  /** Wakes expert {@code id}: one at a time, the other one sleeps first. */
  synchronized void wake(String id) {
    if (oneAtATime() && !id.equals(awake)) {
      switchTo(id);
    } else {
      backend.wakeComponent(tag(known(id)));
    }
  }

  /** Replaces expert {@code id} by one loaded with new weights (a weight sync). */
  void replace(String id, WanTransformer fresh) {
    known(id);
    loaded.put(id, fresh);
  }

  @Override
  public List<String> components() {
    return routing.experts();
  }

  @Override
  public Set<String> poolTags() {
    return routing.experts().stream().map(this::tag).collect(Collectors.toUnmodifiableSet());
  }

  @Override
  public synchronized Optional<String> awake() {
    return Optional.ofNullable(awake);
  }

  /**
   * Parking the largest expert's pool and restoring another as large, at the rates measured on an
   * H200; 0 on a backend without device memory, where sleeping keeps everything in place.
   */
  @Override
  public double switchMillis() {
    Set<String> tags = poolTags();
    long bytes =
        backend.deviceMemory().stream()
            .flatMap(m -> m.components().stream())
            .filter(c -> tags.contains(c.component()))
            .mapToLong(ComponentMemory::awakeBytes)
            .max()
            .orElse(0);
    return bytes / PARK_BYTES_PER_MILLI + bytes / RESTORE_BYTES_PER_MILLI;
  }

  @Override
  public synchronized void switchTo(String component) {
    known(component);
    for (String other : routing.experts()) {
      if (!other.equals(component)) {
        backend.sleepComponent(tag(other));
      }
    }
    backend.wakeComponent(tag(component));
    awake = component;
  }

  private String known(String id) {
    if (!routing.experts().contains(id)) {
      throw new IllegalArgumentException("no expert '" + id + "' (" + routing.experts() + ")");
    }
    return id;
  }

  private String tag(String id) {
    return WanModel.memoryTag(instanceId, id);
  }
}

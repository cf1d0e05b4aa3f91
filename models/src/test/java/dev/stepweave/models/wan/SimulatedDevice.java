package dev.stepweave.models.wan;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.ComponentMemory;
import dev.stepweave.tensor.DeviceMemory;
import dev.stepweave.tensor.Storage;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The CPU backend behind a wrapper that plays a device of {@code totalBytes} with a weight pool per
 * component, as the CUDA backend keeps them: a component's pool holds the tensors its load
 * uploaded, sleeping frees them and waking takes them again, and {@link Backend#deviceMemory}
 * reports it. It fails loudly — throws, and keeps the violation for the test to assert on — when
 * awake pools would exceed the device, when a computation reads a weight of a sleeping component,
 * and, if the experts are to take turns, when {@code transformer} and {@code transformer_2} are
 * awake together.
 */
final class SimulatedDevice {
  /** A component's pool: its bytes and whether it sleeps. */
  private static final class Pool {
    long bytes;
    boolean asleep;
  }

  final Backend backend;
  private final long totalBytes;
  private final boolean expertsTakeTurns;
  private final Map<String, Pool> pools = new LinkedHashMap<>();
  // The storage of every tensor a load made, by the pool it belongs to.
  private final Map<Storage, String> weights = new IdentityHashMap<>();
  private final List<String> events = new ArrayList<>();
  private final List<String> violations = new ArrayList<>();
  private String loading;

  /**
   * @param expertsTakeTurns whether the two experts must never be awake together
   */
  SimulatedDevice(long totalBytes, boolean expertsTakeTurns) {
    this.totalBytes = totalBytes;
    this.expertsTakeTurns = expertsTakeTurns;
    CpuBackend cpu = new CpuBackend(1);
    backend =
        (Backend)
            Proxy.newProxyInstance(
                Backend.class.getClassLoader(),
                new Class<?>[] {Backend.class},
                (proxy, method, args) -> {
                  synchronized (this) {
                    return call(cpu, method, args);
                  }
                });
  }

  private Object call(CpuBackend cpu, Method method, Object[] args) throws Throwable {
    switch (method.getName()) {
      case "loadingComponent" -> {
        String tag = (String) args[0];
        pools.computeIfAbsent(tag, t -> new Pool());
        events.add("load " + component(tag));
        String outer = loading;
        loading = tag;
        try {
          return invoke(method, cpu, args);
        } finally {
          loading = outer;
          check();
        }
      }
      case "sleepComponent" -> {
        Pool p = pool((String) args[0]);
        if (!p.asleep) {
          p.asleep = true;
          events.add("sleep " + component((String) args[0]));
        }
        return null;
      }
      case "wakeComponent" -> {
        Pool p = pool((String) args[0]);
        if (p.asleep) {
          p.asleep = false;
          events.add("wake " + component((String) args[0]));
          check();
        }
        return null;
      }
      case "releaseComponent" -> {
        pools.remove((String) args[0]);
        weights.values().removeIf(args[0]::equals);
        return null;
      }
      case "deviceMemory" -> {
        return Optional.of(memory());
      }
      default -> {}
    }
    if (args != null) {
      for (Object a : args) {
        readable(a, method.getName());
      }
    }
    Object out = invoke(method, cpu, args);
    if (loading != null && out instanceof Tensor t) {
      if (method.getName().startsWith("upload")) {
        pools.get(loading).bytes += t.byteSize();
      }
      weights.put(t.storage(), loading);
    }
    return out;
  }

  /** What the device holds now, as the CUDA backend reports it. */
  private DeviceMemory memory() {
    List<ComponentMemory> components = new ArrayList<>();
    long awake = 0;
    for (var e : pools.entrySet()) {
      Pool p = e.getValue();
      components.add(
          new ComponentMemory(e.getKey(), p.asleep ? 0 : p.bytes, p.bytes, p.bytes, p.asleep));
      awake += p.asleep ? 0 : p.bytes;
    }
    return new DeviceMemory(totalBytes, Math.max(0, totalBytes - awake), 0, components);
  }

  /**
   * Fails when the awake pools exceed the device, or both experts are awake while they take turns.
   */
  private void check() {
    long awake = pools.values().stream().filter(p -> !p.asleep).mapToLong(p -> p.bytes).sum();
    if (awake > totalBytes) {
      violate("out of device memory: " + awake + " bytes of weights awake on " + totalBytes);
    }
    if (expertsTakeTurns && awakeCount("transformer") + awakeCount("transformer_2") > 1) {
      violate("both experts awake: " + events);
    }
  }

  private int awakeCount(String component) {
    return (int)
        pools.entrySet().stream()
            .filter(e -> component(e.getKey()).equals(component) && !e.getValue().asleep)
            .count();
  }

  /** Fails when {@code arg} is (or holds) a weight of a sleeping component. */
  private void readable(Object arg, String method) {
    if (arg instanceof Tensor t) {
      String tag = weights.get(t.storage());
      if (tag != null && pools.containsKey(tag) && pools.get(tag).asleep) {
        violate(method + " read a weight of " + component(tag) + ", which sleeps");
      }
    } else if (arg instanceof List<?> list) {
      list.forEach(a -> readable(a, method));
    }
  }

  private void violate(String what) {
    violations.add(what);
    throw new IllegalStateException("simulated device: " + what);
  }

  private Pool pool(String tag) {
    Pool p = pools.get(tag);
    if (p == null) {
      throw new IllegalArgumentException("no component pool '" + tag + "'");
    }
    return p;
  }

  private static String component(String tag) {
    return tag.substring(tag.indexOf('/') + 1);
  }

  private static Object invoke(Method m, Object target, Object[] args) throws Throwable {
    try {
      return m.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  /** Loads, sleeps and wakes in order, by component id ("load transformer_2", "sleep …"). */
  synchronized List<String> events() {
    return List.copyOf(events);
  }

  /** Everything that went wrong, in order; empty when the model kept every rule. */
  synchronized List<String> violations() {
    return Collections.unmodifiableList(new ArrayList<>(violations));
  }

  /** Bytes of each component's pool, by component id. */
  synchronized Map<String, Long> poolBytes() {
    Map<String, Long> out = new LinkedHashMap<>();
    pools.forEach((tag, p) -> out.put(component(tag), p.bytes));
    return out;
  }

  /** Whether {@code component}'s pool sleeps now. */
  synchronized boolean asleep(String component) {
    return pools.entrySet().stream()
        .anyMatch(e -> component(e.getKey()).equals(component) && e.getValue().asleep);
  }
}

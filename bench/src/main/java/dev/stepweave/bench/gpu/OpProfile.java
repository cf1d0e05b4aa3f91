package dev.stepweave.bench.gpu;

import dev.stepweave.cuda.CudaBackend;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * Where a forward's GPU time goes, op by op: a {@link Backend} proxy over a {@link CudaBackend}
 * that times every outermost operation with CUDA events (each op is synchronised, so the sum
 * exceeds an unprofiled forward by the lost overlap of host and device). Ops are keyed by name and
 * the shapes of their tensor arguments; scopes and graphs pass through untimed, their ops timed.
 */
final class OpProfile implements InvocationHandler {
  private static final Set<String> PASS_THROUGH =
      Set.of("scoped", "chain", "stepMemory", "replayable", "device", "name", "activationDType");

  private record Entry(double ms, int calls) {}

  private final CudaBackend gpu;
  private final Map<String, Entry> entries = new LinkedHashMap<>();
  private int depth;

  private OpProfile(CudaBackend gpu) {
    this.gpu = gpu;
  }

  /** A profile and the backend to load and run the model with. */
  static OpProfile over(CudaBackend gpu) {
    return new OpProfile(gpu);
  }

  Backend backend() {
    return (Backend)
        Proxy.newProxyInstance(
            Backend.class.getClassLoader(), new Class<?>[] {Backend.class}, this);
  }

  @Override
  public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
    if (depth > 0 || PASS_THROUGH.contains(method.getName())) {
      return call(method, args);
    }
    Object[] result = new Object[1];
    depth++;
    try {
      float ms = gpu.context().time(() -> result[0] = uncheckedCall(method, args));
      entries.merge(
          key(method, args), new Entry(ms, 1), (a, b) -> new Entry(a.ms + b.ms, a.calls + 1));
    } finally {
      depth--;
    }
    return result[0];
  }

  private Object call(Method method, Object[] args) throws Throwable {
    try {
      return method.invoke(gpu, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  private Object uncheckedCall(Method method, Object[] args) {
    try {
      return call(method, args);
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new IllegalStateException(t);
    }
  }

  private static String key(Method method, Object[] args) {
    StringBuilder k = new StringBuilder(method.getName());
    if (args != null) {
      for (Object a : args) {
        if (a instanceof Tensor t) {
          k.append(' ').append(t.dtype()).append(Arrays.toString(t.shape()));
        }
      }
    }
    return k.toString();
  }

  /** Forgets what was timed so far. */
  void reset() {
    entries.clear();
  }

  void print(String title) {
    double total = entries.values().stream().mapToDouble(Entry::ms).sum();
    System.out.printf("== op profile: %s, %.1f ms in timed ops%n", title, total);
    // First the totals per operation (shapes merged), then the heaviest shapes.
    Map<String, Entry> byOp = new LinkedHashMap<>();
    entries.forEach(
        (key, e) ->
            byOp.merge(
                key.split(" ", 2)[0], e, (a, b) -> new Entry(a.ms + b.ms, a.calls + b.calls)));
    byOp.entrySet().stream()
        .sorted(Comparator.comparingDouble((Map.Entry<String, Entry> e) -> -e.getValue().ms()))
        .forEach(
            e ->
                System.out.printf(
                    "  %8.2f ms %5.1f%% %4d× %s (all shapes)%n",
                    e.getValue().ms(),
                    100 * e.getValue().ms() / total,
                    e.getValue().calls(),
                    e.getKey()));
    entries.entrySet().stream()
        .sorted(Comparator.comparingDouble((Map.Entry<String, Entry> e) -> -e.getValue().ms()))
        .limit(40)
        .forEach(
            e ->
                System.out.printf(
                    "  %8.2f ms %5.1f%% %4d× %s%n",
                    e.getValue().ms(),
                    100 * e.getValue().ms() / total,
                    e.getValue().calls(),
                    e.getKey()));
  }
}

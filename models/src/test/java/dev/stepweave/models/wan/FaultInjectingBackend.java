package dev.stepweave.models.wan;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Fault;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A real backend (the CPU's) behind a wrapper that fails the {@code nth} call of {@code method} as
 * a device does on a sticky error: that call and every later one throw, and {@link
 * Backend#classify} calls the failure pool-fatal — what the CUDA backend says of
 * CUDA_ERROR_ILLEGAL_ADDRESS. Closing it is recorded (it is {@link AutoCloseable}, as the CUDA
 * backend is).
 */
final class FaultInjectingBackend {
  /** The injected failure. */
  static final class InjectedDeviceFault extends RuntimeException {
    InjectedDeviceFault(String message) {
      super(message);
    }
  }

  final Backend backend;
  final AtomicInteger calls = new AtomicInteger();
  final AtomicBoolean broken = new AtomicBoolean();
  final AtomicBoolean closed = new AtomicBoolean();

  FaultInjectingBackend(Backend real, String method, int nth) {
    backend =
        (Backend)
            Proxy.newProxyInstance(
                Backend.class.getClassLoader(),
                new Class<?>[] {Backend.class, AutoCloseable.class},
                (proxy, m, args) -> {
                  switch (m.getName()) {
                    case "classify" -> {
                      RuntimeException e = (RuntimeException) args[0];
                      return e instanceof InjectedDeviceFault
                          ? new Fault.PoolFatal(e.getMessage())
                          : real.classify(e);
                    }
                    case "close" -> {
                      closed.set(true);
                      return null;
                    }
                    case "toString" -> {
                      return "FaultInjectingBackend(" + method + " #" + nth + ")";
                    }
                    case "hashCode" -> {
                      return System.identityHashCode(proxy);
                    }
                    case "equals" -> {
                      return proxy == args[0];
                    }
                    default -> {}
                  }
                  if (m.getName().equals(method) && calls.incrementAndGet() == nth) {
                    broken.set(true);
                  }
                  if (broken.get()
                      && !m.getName().equals("device")
                      && !m.getName().equals("name")) {
                    throw new InjectedDeviceFault(
                        "injected sticky device error at call " + nth + " of " + method);
                  }
                  try {
                    return m.invoke(real, args);
                  } catch (InvocationTargetException e) {
                    throw e.getCause();
                  }
                });
  }
}

package dev.stepweave.tensor.cpu;

/**
 * The JDK's Vector API, which the CPU backend computes with, is still an incubator module: a JVM
 * has it only when started with {@value #JVM_FLAG}. Without it the first kernel class to load would
 * fail with {@code NoClassDefFoundError: jdk/incubator/vector/Vector}; {@link CpuBackend} checks
 * first and says which flag is missing.
 */
public final class VectorApi {
  /** The JVM option that makes the Vector API available. */
  public static final String JVM_FLAG = "--add-modules jdk.incubator.vector";

  private static final String MODULE = "jdk.incubator.vector";

  private VectorApi() {}

  /** Whether this JVM was started with the Vector API module. */
  public static boolean available() {
    return ModuleLayer.boot().findModule(MODULE).isPresent();
  }

  /**
   * Fails unless the Vector API is available.
   *
   * @throws IllegalStateException naming the JVM flag that is missing
   */
  public static void require() {
    if (!available()) {
      throw new IllegalStateException(
          "the CPU backend needs the JDK's Vector API: start java with "
              + JVM_FLAG
              + " (Stepweave's launcher and Maven builds pass it; see docs/java.md)");
    }
  }
}

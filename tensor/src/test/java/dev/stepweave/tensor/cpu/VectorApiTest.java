package dev.stepweave.tensor.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A JVM started without the Vector API gets one line naming the flag, not a NoClassDefFoundError.
 */
class VectorApiTest {
  /** Run in a child JVM: constructs a backend and prints what it got. */
  public static final class Probe {
    public static void main(String[] args) {
      try {
        new CpuBackend(1);
        System.out.println("constructed");
      } catch (IllegalStateException e) {
        System.out.println(e.getMessage());
      }
    }
  }

  @Test
  void thisJvmHasIt() {
    assertTrue(VectorApi.available());
  }

  @Test
  void aJvmWithoutTheFlagIsToldWhichFlagIsMissing() throws Exception {
    String java = ProcessHandle.current().info().command().orElseThrow();
    Process p =
        new ProcessBuilder(
                List.of(java, "-cp", System.getProperty("java.class.path"), Probe.class.getName()))
            .redirectErrorStream(true)
            .start();
    assertTrue(p.waitFor(60, TimeUnit.SECONDS));
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertEquals(0, p.exitValue(), out);
    assertEquals(
        "the CPU backend needs the JDK's Vector API: start java with --add-modules"
            + " jdk.incubator.vector (Stepweave's launcher and Maven builds pass it; see"
            + " docs/java.md)\n",
        out);
  }
}

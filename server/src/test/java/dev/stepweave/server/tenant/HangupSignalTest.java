package dev.stepweave.server.tenant;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Whether SIGHUP can reach the key reload, asked of a fresh JVM: yes in an ordinary process, no in
 * one started under {@code nohup} (the JVM leaves an ignored SIGHUP ignored, so the server must say
 * the keys are read at start only rather than promise a reload that never comes).
 */
class HangupSignalTest {
  /** Prints whether subscribing to SIGHUP took. */
  public static final class Probe {
    public static void main(String[] args) {
      System.out.println(HangupSignal.subscribe(() -> {}));
    }
  }

  private static String probe(String... prefix) throws Exception {
    List<String> command = new ArrayList<>(List.of(prefix));
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(List.of("-cp", System.getProperty("java.class.path"), Probe.class.getName()));
    Process p = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
    assertEquals(0, p.waitFor(), out);
    return out;
  }

  @Test
  void anOrdinaryProcessGetsSighupOneStartedUnderNohupDoesNot() throws Exception {
    assertEquals("true", probe());
    assertEquals("false", probe("nohup"));
  }
}

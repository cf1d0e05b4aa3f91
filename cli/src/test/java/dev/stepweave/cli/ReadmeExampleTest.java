package dev.stepweave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.media.Mp4Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The README's Java example is {@code example/QuickStart.java} of this module's tests, verbatim
 * (without its package line), and it runs: compiled with the tests, started as a user would start
 * it (a JVM with the Vector API flag, the working directory its own), it writes its MP4.
 */
class ReadmeExampleTest {
  static final Path ROOT = Path.of(System.getProperty("stepweave.golden")).getParent().getParent();
  static final Path EXAMPLE = Path.of("src/test/java/example/QuickStart.java");

  @TempDir Path tmp;

  @Test
  void theReadmeShowsTheExampleVerbatim() throws Exception {
    String source = Files.readString(EXAMPLE);
    String body = source.substring(source.indexOf("import "));
    String readme = Files.readString(ROOT.resolve("README.md"));
    assertTrue(
        readme.contains("```java\n" + body + "```\n"),
        "README.md must hold example/QuickStart.java from its first import, in a java block");
  }

  @Test
  void theExampleRunsAgainstTheEmbeddedModel() throws Exception {
    String java = ProcessHandle.current().info().command().orElseThrow();
    Process p =
        new ProcessBuilder(
                List.of(
                    java,
                    "--add-modules",
                    "jdk.incubator.vector",
                    "-cp",
                    System.getProperty("java.class.path"),
                    "example.QuickStart"))
            .directory(tmp.toFile())
            .redirectErrorStream(true)
            .start();
    assertTrue(p.waitFor(300, TimeUnit.SECONDS), "the example did not finish in 5 minutes");
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertEquals(0, p.exitValue(), out);
    assertTrue(out.contains("9 frames of wan21-embedded"), out);
    assertEquals(9, Mp4Reader.read(tmp.resolve("out.mp4")).frames().dim(0));
  }
}

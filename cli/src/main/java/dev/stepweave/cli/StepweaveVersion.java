package dev.stepweave.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;
import picocli.CommandLine.IVersionProvider;

/** The project version, stamped into a resource by the build; {@code --version} prints it. */
final class StepweaveVersion implements IVersionProvider {
  /** The version, e.g. {@code 0.1.0-SNAPSHOT}. */
  static String get() {
    try (InputStream in = StepweaveVersion.class.getResourceAsStream("version.properties")) {
      if (in == null) {
        throw new IllegalStateException("version.properties is missing from the build");
      }
      Properties p = new Properties();
      p.load(in);
      return p.getProperty("version");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public String[] getVersion() {
    return new String[] {"stepweave " + get()};
  }
}

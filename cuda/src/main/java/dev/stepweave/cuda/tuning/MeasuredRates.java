package dev.stepweave.cuda.tuning;

import dev.stepweave.tensor.DeviceRates;
import java.io.IOException;
import java.io.Reader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;
import java.util.Optional;
import java.util.Properties;
import java.util.function.Supplier;

/**
 * A device's measured rates kept on disk beside the compiled kernels, per (device, architecture,
 * activation dtype), so a later process seeds its cost model without probing again: the probe (an
 * 8192³ GEMM whose algorithms are timed, a 1 GiB copy) is about 0.2 s of every cold start, and the
 * cost model calibrates its rates against measured steps anyway. A file that cannot be read is
 * measured over; one that cannot be written is left as it is.
 */
public final class MeasuredRates {
  private MeasuredRates() {}

  /** The rates in {@code dir} (null: measure, keep nothing) for this device, else measured now. */
  public static DeviceRates readOrMeasure(
      Path dir, String device, String arch, String dtype, Supplier<DeviceRates> measure) {
    Path file =
        dir == null
            ? null
            : dir.resolve(
                ("rates-" + device + "-" + arch + "-" + dtype).replaceAll("[^A-Za-z0-9.]+", "_")
                    + ".properties");
    Optional<DeviceRates> earlier = file == null ? Optional.empty() : read(file);
    if (earlier.isPresent()) {
      return earlier.get();
    }
    DeviceRates rates = measure.get();
    if (file != null) {
      write(file, rates);
    }
    return rates;
  }

  private static Optional<DeviceRates> read(Path file) {
    if (!Files.isReadable(file)) {
      return Optional.empty();
    }
    Properties p = new Properties();
    try (Reader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      p.load(in);
      double flops = Double.parseDouble(p.getProperty("flopsPerMilli"));
      double bytes = Double.parseDouble(p.getProperty("bytesPerMilli"));
      String how = p.getProperty("how", "");
      return Optional.of(
          new DeviceRates(
              flops, bytes, how.replace("(measured)", "(measured by an earlier process)")));
    } catch (IOException | RuntimeException unreadable) {
      return Optional.empty();
    }
  }

  private static void write(Path file, DeviceRates rates) {
    Properties p = new Properties();
    p.setProperty("flopsPerMilli", String.format(Locale.ROOT, "%.6e", rates.flopsPerMilli()));
    p.setProperty("bytesPerMilli", String.format(Locale.ROOT, "%.6e", rates.bytesPerMilli()));
    p.setProperty("how", rates.how());
    try {
      Files.createDirectories(file.getParent());
      Path tmp = Files.createTempFile(file.getParent(), file.getFileName().toString(), ".tmp");
      try (Writer out = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
        p.store(out, "device rates measured by RateProbe");
      }
      Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException e) {
      // Not kept: the next process measures again.
    }
  }
}

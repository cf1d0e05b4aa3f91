package dev.stepweave.cuda.tuning;

import dev.stepweave.tensor.DeviceRates;
import java.nio.file.Path;
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
        dir == null ? null : KeptProperties.file(dir, "rates-" + device + "-" + arch + "-" + dtype);
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
    Properties p = KeptProperties.read(file);
    try {
      double flops = Double.parseDouble(p.getProperty("flopsPerMilli"));
      double bytes = Double.parseDouble(p.getProperty("bytesPerMilli"));
      String how = p.getProperty("how", "");
      return Optional.of(
          new DeviceRates(
              flops, bytes, how.replace("(measured)", "(measured by an earlier process)")));
    } catch (RuntimeException absentOrMalformed) {
      return Optional.empty();
    }
  }

  private static void write(Path file, DeviceRates rates) {
    Properties p = new Properties();
    p.setProperty("flopsPerMilli", String.format(Locale.ROOT, "%.6e", rates.flopsPerMilli()));
    p.setProperty("bytesPerMilli", String.format(Locale.ROOT, "%.6e", rates.bytesPerMilli()));
    p.setProperty("how", rates.how());
    KeptProperties.write(file, p, "device rates measured by RateProbe (stepweave)");
  }
}

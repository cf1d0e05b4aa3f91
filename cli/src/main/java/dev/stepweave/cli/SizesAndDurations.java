package dev.stepweave.cli;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The forms of the serve command's durations ({@code 90s}, {@code 12h}, {@code 7d}) and sizes. */
final class SizesAndDurations {
  private static final Pattern DURATION = Pattern.compile("(\\d+)(ms|s|m|h|d)");
  private static final Pattern BYTES = Pattern.compile("(\\d+)([kmgt]?)");

  private SizesAndDurations() {}

  /**
   * {@code 500ms}, {@code 90s}, {@code 30m}, {@code 12h}, {@code 7d}, or ISO-8601 ({@code PT1H}).
   *
   * @throws IllegalArgumentException naming {@code option} and the value
   */
  static Duration duration(String option, String value) {
    String v = value.strip().toLowerCase(Locale.ROOT);
    Matcher m = DURATION.matcher(v);
    if (m.matches()) {
      long n = Long.parseLong(m.group(1));
      return switch (m.group(2)) {
        case "ms" -> Duration.ofMillis(n);
        case "s" -> Duration.ofSeconds(n);
        case "m" -> Duration.ofMinutes(n);
        case "h" -> Duration.ofHours(n);
        default -> Duration.ofDays(n);
      };
    }
    try {
      return Duration.parse(value.strip());
    } catch (DateTimeParseException e) {
      throw new IllegalArgumentException(
          option + " must be a duration like 90s, 30m, 12h, 7d or PT1H, got '" + value + "'");
    }
  }

  /**
   * A byte count, plain or with a binary suffix: {@code 500000000}, {@code 20g} (20 GiB).
   *
   * @throws IllegalArgumentException naming {@code option} and the value
   */
  static long bytes(String option, String value) {
    Matcher m = BYTES.matcher(value.strip().toLowerCase(Locale.ROOT));
    if (!m.matches()) {
      throw new IllegalArgumentException(
          option + " must be a byte count like 500000000 or 20g, got '" + value + "'");
    }
    int shift =
        switch (m.group(2)) {
          case "k" -> 10;
          case "m" -> 20;
          case "g" -> 30;
          case "t" -> 40;
          default -> 0;
        };
    try {
      long n = Long.parseLong(m.group(1));
      if (n > (Long.MAX_VALUE >> shift)) {
        throw new NumberFormatException();
      }
      return n << shift;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(option + " is too large: '" + value + "'");
    }
  }
}

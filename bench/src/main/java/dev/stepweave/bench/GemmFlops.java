package dev.stepweave.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Turns a JMH JSON result of {@link GemmBenchmark} into GFLOP/s per shape and thread count. Usage:
 * {@code java -cp benchmarks.jar dev.stepweave.bench.GemmFlops result.json}.
 */
public final class GemmFlops {
  private GemmFlops() {}

  /** {@code "MxNxK"} to {@code {M, N, K}}. */
  static int[] parse(String shape) {
    String[] p = shape.split("x");
    if (p.length != 3) {
      throw new IllegalArgumentException("shape '" + shape + "' is not MxNxK");
    }
    return new int[] {Integer.parseInt(p[0]), Integer.parseInt(p[1]), Integer.parseInt(p[2])};
  }

  public static void main(String[] args) throws IOException {
    String json = Files.readString(Path.of(args[0]));
    // A light scan of the fields we need keeps this free of a JSON dependency.
    for (String entry : json.split("\"benchmark\"")) {
      int shapeAt = entry.indexOf("\"shape\"");
      int scoreAt = entry.indexOf("\"score\"");
      if (shapeAt < 0 || scoreAt < 0) {
        continue;
      }
      String shape = quoted(entry, shapeAt + 7);
      String threads = quoted(entry, entry.indexOf("\"threads\"", shapeAt - 200) + 9);
      double ms = number(entry, scoreAt + 7);
      int[] mnk = parse(shape);
      double gflops = 2.0 * mnk[0] * mnk[1] * mnk[2] / (ms * 1e-3) / 1e9;
      System.out.printf(
          "%-18s threads=%-3s %10.2f ms %8.1f GFLOP/s%n",
          shape, threads.equals("0") ? "all" : threads, ms, gflops);
    }
  }

  private static String quoted(String s, int from) {
    int a = s.indexOf('"', s.indexOf(':', from) + 1);
    return s.substring(a + 1, s.indexOf('"', a + 1));
  }

  private static double number(String s, int from) {
    int a = s.indexOf(':', from) + 1;
    int b = a;
    while (b < s.length() && ",}\n".indexOf(s.charAt(b)) < 0) {
      b++;
    }
    return Double.parseDouble(s.substring(a, b).trim());
  }
}

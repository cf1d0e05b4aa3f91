package dev.stepweave.core.extend;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/** Per-plugin counters ("dbcache.skipped_blocks") summed over every request a deployment ran. */
public final class ExtensionMetrics {
  private final Map<String, LongAdder> counters = new ConcurrentHashMap<>();

  /** Adds one finished request's report (counter name → value). */
  public void record(Map<String, Long> report) {
    report.forEach((k, v) -> counters.computeIfAbsent(k, x -> new LongAdder()).add(v));
  }

  /** The counters now, sorted by name. */
  public Map<String, Long> snapshot() {
    Map<String, Long> out = new TreeMap<>();
    counters.forEach((k, v) -> out.put(k, v.sum()));
    return out;
  }
}

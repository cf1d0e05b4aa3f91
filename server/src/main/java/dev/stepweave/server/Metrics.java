package dev.stepweave.server;

import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.extend.ExtensionMetrics;
import dev.stepweave.core.runtime.EngineStats;
import dev.stepweave.core.runtime.Histogram;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/** Engine and server counters in the Prometheus text exposition format (version 0.0.4). */
final class Metrics {
  static final String CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

  private final StringBuilder out = new StringBuilder();

  private Metrics() {}

  static String render(EngineStats s, ExtensionMetrics plugins, Jobs jobs) {
    Metrics m = new Metrics();
    m.gauge("stepweave_queue_depth", "Requests waiting for admission.", s.queued());
    m.gauge("stepweave_running_loops", "Loops admitted and not finished.", s.runningLoops());
    m.gauge("stepweave_accepting", "1 while new requests are admitted.", jobs.accepting() ? 1 : 0);
    m.gauge("stepweave_pending_jobs", "HTTP jobs queued or running.", jobs.pending());
    m.gauge("stepweave_artifact_bytes", "Bytes of finished videos on disk.", jobs.artifactBytes());
    m.counter(
        "stepweave_artifacts_removed_total",
        "Videos removed by retention (TTL or quota).",
        jobs.removedArtifacts());
    m.counter(
        "stepweave_checkpoint_files_total",
        "Checkpoint files written for restarts.",
        jobs.checkpoints().filesWritten());
    m.counter(
        "stepweave_checkpoint_write_seconds_total",
        "Time spent writing checkpoint files.",
        jobs.checkpoints().writeTime().toNanos() / 1e9);
    m.counter(
        "stepweave_store_failures_total", "Job store writes that failed.", jobs.storeFailures());
    m.counter("stepweave_requests_admitted_total", "Requests admitted.", s.admitted());
    m.counter(
        "stepweave_requests_rejected_total",
        "Requests refused by the engine (bad input, recipe, admission).",
        s.rejected());
    m.counter("stepweave_requests_completed_total", "Requests completed.", s.completed());
    m.counter("stepweave_requests_failed_total", "Requests failed.", s.failed());
    m.counter("stepweave_requests_cancelled_total", "Requests cancelled.", s.cancelled());
    m.header(
        "stepweave_http_refused_total",
        "counter",
        "Create calls refused before reaching the engine, by reason.");
    m.sample("stepweave_http_refused_total{reason=\"queue_full\"}", jobs.refusedBusy());
    m.sample("stepweave_http_refused_total{reason=\"not_accepting\"}", jobs.refusedDraining());
    m.header("stepweave_step_seconds", "histogram", "Step latency by work kind.");
    Map<WorkKind, Histogram> byKind = new TreeMap<>(s.stepSeconds());
    byKind.forEach(
        (kind, h) ->
            m.histogram(
                "stepweave_step_seconds",
                "kind=\"" + kind.name().toLowerCase(Locale.ROOT) + "\"",
                h));
    m.header("stepweave_batch_size", "histogram", "Work units per executed batch.");
    m.histogram("stepweave_batch_size", "", s.batchSizes());
    m.header(
        "stepweave_cost_model_relative_error",
        "histogram",
        "|predicted - measured| / measured device time of each executed batch.");
    m.histogram("stepweave_cost_model_relative_error", "", s.costPredictionError());
    m.header(
        "stepweave_cache_total",
        "counter",
        "What cache plugins did over completed requests, by plugin and counter"
            + " (skipped_blocks, cached_steps, computed_steps).");
    plugins
        .snapshot()
        .forEach(
            (name, value) -> {
              int dot = Math.max(0, name.indexOf('.'));
              m.sample(
                  "stepweave_cache_total{plugin=\""
                      + name.substring(0, dot)
                      + "\",counter=\""
                      + name.substring(dot + 1)
                      + "\"}",
                  value);
            });
    return m.out.toString();
  }

  private void gauge(String name, String help, double value) {
    header(name, "gauge", help);
    sample(name, value);
  }

  private void counter(String name, String help, double value) {
    header(name, "counter", help);
    sample(name, value);
  }

  private void header(String name, String type, String help) {
    out.append("# HELP ").append(name).append(' ').append(help).append('\n');
    out.append("# TYPE ").append(name).append(' ').append(type).append('\n');
  }

  private void histogram(String name, String labels, Histogram h) {
    String prefix = labels.isEmpty() ? "" : labels + ",";
    double[] bounds = h.upperBounds();
    long[] counts = h.cumulativeCounts();
    for (int i = 0; i < bounds.length; i++) {
      sample(name + "_bucket{" + prefix + "le=\"" + number(bounds[i]) + "\"}", counts[i]);
    }
    sample(name + "_bucket{" + prefix + "le=\"+Inf\"}", h.count());
    String suffix = labels.isEmpty() ? "" : "{" + labels + "}";
    sample(name + "_sum" + suffix, h.sum());
    sample(name + "_count" + suffix, h.count());
  }

  private void sample(String series, double value) {
    out.append(series).append(' ').append(number(value)).append('\n');
  }

  private static String number(double v) {
    if (v == Math.rint(v) && Math.abs(v) < 1e15) {
      return Long.toString((long) v);
    }
    return Double.toString(v);
  }
}

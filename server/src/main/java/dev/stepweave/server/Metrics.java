package dev.stepweave.server;

import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.extend.ExtensionMetrics;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.Histogram;
import dev.stepweave.server.tenant.Tenant;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.ClassicHistogramBuckets;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * The server's Prometheus metrics (client_java): engine and job series read from {@link
 * Engine#stats()} at each scrape, HTTP calls counted as they happen, and, for the admin key only,
 * the same by tenant label.
 */
final class Metrics {
  static final String CONTENT_TYPE = PrometheusTextFormatWriter.CONTENT_TYPE;

  private static final PrometheusTextFormatWriter TEXT = PrometheusTextFormatWriter.create();

  private final PrometheusRegistry registry = new PrometheusRegistry();
  private final PrometheusRegistry detail = new PrometheusRegistry();
  private final Counter tenantCalls;
  private final Counter tenantLimited;
  private final Map<String, String> labels = new ConcurrentHashMap<>();

  /**
   * @param openStreams event streams open now, by tenant id (read at each scrape)
   */
  Metrics(Engine engine, Jobs jobs, Supplier<Map<String, ? extends Number>> openStreams) {
    gauge(
        "stepweave_queue_depth", "Requests waiting for admission.", () -> engine.stats().queued());
    gauge(
        "stepweave_running_loops",
        "Loops admitted and not finished.",
        () -> engine.stats().runningLoops());
    gauge(
        "stepweave_accepting",
        "1 while new requests are admitted.",
        () -> jobs.accepting() ? 1 : 0);
    gauge("stepweave_pending_jobs", "HTTP jobs queued or running.", jobs::pending);
    gauge("stepweave_artifact_bytes", "Bytes of finished videos on disk.", jobs::artifactBytes);
    counter(
        "stepweave_artifacts_removed",
        "Videos removed by retention (TTL or quota).",
        jobs::removedArtifacts);
    counter(
        "stepweave_checkpoint_files",
        "Checkpoint files written for restarts.",
        () -> jobs.checkpoints().filesWritten());
    counter(
        "stepweave_checkpoint_write_seconds",
        "Time spent writing checkpoint files.",
        () -> jobs.checkpoints().writeTime().toNanos() / 1e9);
    counter("stepweave_store_failures", "Job store writes that failed.", jobs::storeFailures);
    counter("stepweave_requests_admitted", "Requests admitted.", () -> engine.stats().admitted());
    counter(
        "stepweave_requests_rejected",
        "Requests refused by the engine (bad input, recipe, admission).",
        () -> engine.stats().rejected());
    counter(
        "stepweave_requests_completed", "Requests completed.", () -> engine.stats().completed());
    counter("stepweave_requests_failed", "Requests failed.", () -> engine.stats().failed());
    counter(
        "stepweave_requests_cancelled", "Requests cancelled.", () -> engine.stats().cancelled());
    CounterWithCallback.builder()
        .name("stepweave_http_refused")
        .help("Create calls refused before reaching the engine, by reason.")
        .labelNames("reason")
        .callback(
            cb -> {
              cb.call(jobs.refusedBusy(), "queue_full");
              cb.call(jobs.refusedDraining(), "not_accepting");
              cb.call(jobs.refusedTenant(), "tenant_queue_full");
            })
        .register(registry);
    registry.register(
        () -> {
          HistogramSnapshot.Builder h =
              HistogramSnapshot.builder()
                  .name("stepweave_step_seconds")
                  .help("Step latency by work kind.");
          new TreeMap<WorkKind, Histogram>(engine.stats().stepSeconds())
              .forEach(
                  (kind, hist) ->
                      h.dataPoint(point(hist, "kind", kind.name().toLowerCase(Locale.ROOT))));
          return h.build();
        });
    registry.register(
        () ->
            HistogramSnapshot.builder()
                .name("stepweave_batch_size")
                .help("Work units per executed batch.")
                .dataPoint(point(engine.stats().batchSizes()))
                .build());
    registry.register(
        () ->
            HistogramSnapshot.builder()
                .name("stepweave_cost_model_relative_error")
                .help("|predicted - measured| / measured device time of each executed batch.")
                .dataPoint(point(engine.stats().costPredictionError()))
                .build());
    registry.register(
        () ->
            HistogramSnapshot.builder()
                .name("stepweave_component_switch_seconds")
                .help(
                    "Each switch between components that take turns on the device (a two-expert"
                        + " model's experts, one awake at a time).")
                .dataPoint(point(engine.stats().componentSwitchSeconds()))
                .build());
    ExtensionMetrics plugins = engine.extensions().metrics();
    CounterWithCallback.builder()
        .name("stepweave_cache")
        .help(
            "What cache plugins did over completed requests, by plugin and counter"
                + " (skipped_blocks, cached_steps, computed_steps).")
        .labelNames("plugin", "counter")
        .callback(
            cb ->
                plugins
                    .snapshot()
                    .forEach(
                        (name, value) -> {
                          int dot = Math.max(0, name.indexOf('.'));
                          cb.call(value, name.substring(0, dot), name.substring(dot + 1));
                        }))
        .register(registry);
    tenantCalls =
        Counter.builder()
            .name("stepweave_tenant_calls")
            .help("HTTP calls by tenant label.")
            .labelNames("tenant")
            .register(detail);
    tenantLimited =
        Counter.builder()
            .name("stepweave_tenant_refused")
            .help("Calls refused with 429 (rate, queued jobs, event streams) by tenant label.")
            .labelNames("tenant")
            .register(detail);
    GaugeWithCallback.builder()
        .name("stepweave_tenant_pending_jobs")
        .help("Jobs queued or running by tenant label.")
        .labelNames("tenant")
        .callback(cb -> jobs.pendingByOwner().forEach((id, n) -> cb.call(n, label(id))))
        .register(detail);
    GaugeWithCallback.builder()
        .name("stepweave_tenant_event_streams")
        .help("Event streams open by tenant label.")
        .labelNames("tenant")
        .callback(cb -> openStreams.get().forEach((id, n) -> cb.call(n.doubleValue(), label(id))))
        .register(detail);
  }

  /** Counts a call the gate let in. */
  void called(Tenant tenant) {
    labels.putIfAbsent(tenant.id(), tenant.label());
    tenantCalls.labelValues(tenant.label()).inc();
  }

  /** Counts a 429. */
  void limited(Tenant tenant) {
    tenantLimited.labelValues(tenant.label()).inc();
  }

  /** The text exposition; the per-tenant series only for the admin key (or without keys). */
  String render(Tenant caller) {
    MetricSnapshots.Builder all = MetricSnapshots.builder();
    registry.scrape().forEach(all::metricSnapshot);
    if (caller.admin()) {
      detail.scrape().forEach(all::metricSnapshot);
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try {
      TEXT.write(out, all.build());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toString(StandardCharsets.UTF_8);
  }

  private String label(String tenantId) {
    return labels.getOrDefault(tenantId, tenantId.isEmpty() ? "anonymous" : tenantId);
  }

  private void gauge(String name, String help, Supplier<Number> value) {
    GaugeWithCallback.builder()
        .name(name)
        .help(help)
        .callback(cb -> cb.call(value.get().doubleValue()))
        .register(registry);
  }

  private void counter(String name, String help, Supplier<Number> value) {
    CounterWithCallback.builder()
        .name(name)
        .help(help)
        .callback(cb -> cb.call(value.get().doubleValue()))
        .register(registry);
  }

  /** One of the engine's cumulative histograms as a Prometheus data point. */
  private static HistogramSnapshot.HistogramDataPointSnapshot point(
      Histogram h, String... labelPairs) {
    double[] bounds = h.upperBounds();
    long[] cumulative = h.cumulativeCounts();
    double[] upper = new double[bounds.length + 1];
    long[] counts = new long[bounds.length + 1];
    long below = 0;
    for (int i = 0; i < bounds.length; i++) {
      upper[i] = bounds[i];
      counts[i] = cumulative[i] - below;
      below = cumulative[i];
    }
    upper[bounds.length] = Double.POSITIVE_INFINITY;
    counts[bounds.length] = h.count() - below;
    return HistogramSnapshot.HistogramDataPointSnapshot.builder()
        .classicHistogramBuckets(ClassicHistogramBuckets.of(upper, counts))
        .sum(h.sum())
        .labels(Labels.of(labelPairs))
        .build();
  }
}

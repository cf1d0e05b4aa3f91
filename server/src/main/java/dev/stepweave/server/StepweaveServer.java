package dev.stepweave.server;

import com.sun.net.httpserver.HttpServer;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.server.store.JobStore;
import dev.stepweave.server.store.JobStores;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.file.Path;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The HTTP API over one {@link Engine}: OpenAI-compatible video and image endpoints, a job's event
 * stream, health, readiness and Prometheus metrics (see docs/server.md). Each call runs on its own
 * virtual thread; how many run at once is bounded by {@link ServerConfig#maxExchanges()}. The
 * server drains the engine on {@link #drain()} but never closes it: its owner does, after {@link
 * #stop()}.
 */
public final class StepweaveServer implements AutoCloseable {
  private final HttpServer http;
  private final ExecutorService calls;
  private final Jobs jobs;
  private final ArtifactStore store;
  private final ServerConfig config;
  private final JobStore rows;
  private final Jobs.Recovery recovery;
  private final ScheduledExecutorService retention;
  private volatile boolean closing;

  private StepweaveServer(
      HttpServer http,
      ExecutorService calls,
      Jobs jobs,
      ArtifactStore store,
      ServerConfig config,
      JobStore rows,
      Jobs.Recovery recovery,
      ScheduledExecutorService retention) {
    this.http = http;
    this.calls = calls;
    this.jobs = jobs;
    this.store = store;
    this.config = config;
    this.rows = rows;
    this.recovery = recovery;
    this.retention = retention;
  }

  /** Like {@link #start(String, int, Engine, ServerConfig, StoreConfig)} with the default store. */
  public static StepweaveServer start(String host, int port, Engine engine, ServerConfig config)
      throws IOException {
    return start(host, port, engine, config, StoreConfig.defaults());
  }

  /**
   * Binds {@code host:port} (port 0 picks a free one) and starts serving.
   *
   * @throws IOException when the address cannot be bound or the artifact directory made
   */
  /**
   * Binds {@code host:port} (port 0 picks a free one), opens the job store, reconciles it with the
   * artifact directory (resuming the jobs a previous run left unfinished, see {@link
   * Jobs#recover}), and starts serving.
   *
   * @throws IOException when the address cannot be bound or the artifact directory made
   * @throws dev.stepweave.server.store.StoreException when the job store cannot be opened
   */
  public static StepweaveServer start(
      String host, int port, Engine engine, ServerConfig config, StoreConfig storeConfig)
      throws IOException {
    ArtifactStore store =
        config.artifactDir() == null
            ? ArtifactStore.temporary()
            : new ArtifactStore(config.artifactDir());
    JobStore rows = JobStores.open(storeConfig.databaseUrl(), store.root());
    HttpServer http;
    try {
      http = HttpServer.create(new InetSocketAddress(host, port), 0);
    } catch (IOException e) {
      rows.close();
      throw e;
    }
    ExecutorService calls = Executors.newVirtualThreadPerTaskExecutor();
    Jobs jobs = new Jobs(engine, store, config, rows, storeConfig);
    Jobs.Recovery recovery = jobs.recover();
    ScheduledExecutorService retention =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "stepweave-retention");
              t.setDaemon(true);
              return t;
            });
    retention.scheduleWithFixedDelay(jobs::sweepQuietly, 1, 1, TimeUnit.SECONDS);
    StepweaveServer server =
        new StepweaveServer(http, calls, jobs, store, config, rows, recovery, retention);
    http.createContext("/", new Api(engine, jobs, config, () -> server.closing));
    http.setExecutor(calls);
    http.start();
    return server;
  }

  /**
   * What the start's reconciliation did: videos kept and missing, jobs resumed, restarted and
   * interrupted, stray files removed.
   */
  public String recoverySummary() {
    Jobs.Recovery r = recovery;
    return r.kept()
        + " videos kept, "
        + r.missing()
        + " missing, "
        + r.resumed()
        + " jobs resumed from checkpoints, "
        + r.restarted()
        + " restarted, "
        + r.interrupted()
        + " interrupted, "
        + r.removedFiles()
        + " stray files removed";
  }

  public InetSocketAddress address() {
    return http.getAddress();
  }

  /** {@code http://host:port} as bound. */
  public URI baseUri() {
    InetSocketAddress a = http.getAddress();
    String host = a.getAddress().getHostAddress();
    return URI.create(
        "http://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + a.getPort());
  }

  /** The jobs, for tests of this package. */
  Jobs jobs() {
    return jobs;
  }

  public Path artifactDir() {
    return store.root();
  }

  /**
   * Stops admitting (create calls get 503, {@code /ready} turns 503) and drains the engine: queued
   * and running jobs finish, for at most the configured drain timeout; then the rest are cancelled
   * at their next step boundary.
   *
   * @return true when every job finished without being cancelled
   */
  public boolean drain() {
    return jobs.drain(config.drainTimeout());
  }

  /** Ends event streams and stops listening. Jobs still running are left to the engine. */
  public void stop() {
    closing = true;
    http.stop(1);
    calls.shutdownNow();
    retention.shutdownNow();
    jobs.close();
    rows.close();
  }

  @Override
  public void close() {
    stop();
  }
}

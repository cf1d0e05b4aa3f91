package dev.stepweave.server;

import com.sun.net.httpserver.HttpServer;
import dev.stepweave.core.runtime.Engine;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.file.Path;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

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
  private volatile boolean closing;

  private StepweaveServer(
      HttpServer http, ExecutorService calls, Jobs jobs, ArtifactStore store, ServerConfig config) {
    this.http = http;
    this.calls = calls;
    this.jobs = jobs;
    this.store = store;
    this.config = config;
  }

  /**
   * Binds {@code host:port} (port 0 picks a free one) and starts serving.
   *
   * @throws IOException when the address cannot be bound or the artifact directory made
   */
  public static StepweaveServer start(String host, int port, Engine engine, ServerConfig config)
      throws IOException {
    ArtifactStore store =
        config.artifactDir() == null
            ? ArtifactStore.temporary()
            : new ArtifactStore(config.artifactDir());
    HttpServer http = HttpServer.create(new InetSocketAddress(host, port), 0);
    ExecutorService calls = Executors.newVirtualThreadPerTaskExecutor();
    Jobs jobs = new Jobs(engine, store, config);
    StepweaveServer server = new StepweaveServer(http, calls, jobs, store, config);
    http.createContext("/", new Api(engine, jobs, config, () -> server.closing));
    http.setExecutor(calls);
    http.start();
    return server;
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
    jobs.close();
  }

  @Override
  public void close() {
    stop();
  }
}

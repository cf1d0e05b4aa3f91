package dev.stepweave.server;

import dev.stepweave.core.runtime.Engine;
import dev.stepweave.server.store.JobStore;
import dev.stepweave.server.store.JobStores;
import dev.stepweave.server.tenant.KeyRing;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.file.Path;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.eclipse.jetty.http2.server.HTTP2CServerConnectionFactory;
import org.eclipse.jetty.server.CustomRequestLog;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.NetworkConnectionLimit;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.RequestLogWriter;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.VirtualThreads;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

/**
 * The HTTP API over one {@link Engine} on Jetty: OpenAI-compatible video and image endpoints, a
 * job's event stream, health, readiness and Prometheus metrics (see docs/server.md). Two
 * connectors: the public one (HTTP/1.1 and h2c) and an admin one that serves only health,
 * readiness, metrics and drain, with connections of its own so that clients of the public one can
 * never take them. Each call runs on its own virtual thread. The server drains the engine on {@link
 * #drain()} but never closes it: its owner does, after {@link #stop()}.
 */
public final class StepweaveServer implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger("dev.stepweave.server");

  /** The access log's line: client, tenant label, time, request line, status, bytes, millis. */
  static final String ACCESS_LOG_FORMAT =
      "%{client}a %{" + Gatekeeper.TENANT_ATTRIBUTE + "}attr %t \"%r\" %s %O %{ms}T";

  private final Server jetty;
  private final ServerConnector publicConnector;
  private final ServerConnector adminConnector;
  private final Jobs jobs;
  private final ArtifactStore store;
  private final ServerConfig config;
  private final JobStore rows;
  private final Jobs.Recovery recovery;
  private final ScheduledExecutorService retention;
  private final KeyRing keys;
  private volatile boolean closing;

  private StepweaveServer(
      Server jetty,
      ServerConnector publicConnector,
      ServerConnector adminConnector,
      Jobs jobs,
      ArtifactStore store,
      ServerConfig config,
      JobStore rows,
      Jobs.Recovery recovery,
      ScheduledExecutorService retention,
      KeyRing keys) {
    this.jetty = jetty;
    this.publicConnector = publicConnector;
    this.adminConnector = adminConnector;
    this.jobs = jobs;
    this.store = store;
    this.config = config;
    this.rows = rows;
    this.recovery = recovery;
    this.retention = retention;
    this.keys = keys;
  }

  /** Starts with {@link HttpConfig#defaults()}: no keys, so {@code host} must be loopback. */
  public static StepweaveServer start(String host, int port, Engine engine, ServerConfig config)
      throws IOException {
    return start(host, port, engine, config, HttpConfig.defaults(), StoreConfig.defaults());
  }

  /** Like {@link #start(String, int, Engine, ServerConfig, HttpConfig, StoreConfig)}. */
  public static StepweaveServer start(
      String host, int port, Engine engine, ServerConfig config, HttpConfig http)
      throws IOException {
    return start(host, port, engine, config, http, StoreConfig.defaults());
  }

  /** Like {@link #start(String, int, Engine, ServerConfig, HttpConfig, StoreConfig)}. */
  public static StepweaveServer start(
      String host, int port, Engine engine, ServerConfig config, StoreConfig storeConfig)
      throws IOException {
    return start(host, port, engine, config, HttpConfig.defaults(), storeConfig);
  }

  /**
   * Binds {@code host:port} (port 0 picks a free one) and the admin connector, opens the job store,
   * reconciles it with the artifact directory (resuming the jobs a previous run left unfinished,
   * see {@link Jobs#recover}), and starts serving.
   *
   * @throws IOException when an address cannot be bound, the key file read or the artifact
   *     directory made
   * @throws IllegalArgumentException for a bad key file, or a non-loopback address without keys and
   *     without {@link HttpConfig#insecureBind()}
   * @throws dev.stepweave.server.store.StoreException when the job store cannot be opened
   */
  public static StepweaveServer start(
      String host,
      int port,
      Engine engine,
      ServerConfig config,
      HttpConfig http,
      StoreConfig storeConfig)
      throws IOException {
    KeyRing keys = http.apiKeyFile() == null ? null : KeyRing.open(http.apiKeyFile());
    if (keys == null) {
      refuseOpenBind(host, "--host", http.insecureBind());
      refuseOpenBind(http.adminHost(), "--admin-host", http.insecureBind());
    } else if (!keys.reloadsOnSignal()) {
      LOG.log(
          System.Logger.Level.WARNING,
          "SIGHUP is not available to this JVM: API keys are read at start only");
    }
    ArtifactStore store =
        config.artifactDir() == null
            ? ArtifactStore.temporary()
            : new ArtifactStore(config.artifactDir());
    JobStore rows;
    try {
      rows = JobStores.open(storeConfig.databaseUrl(), store.root());
    } catch (RuntimeException e) {
      if (keys != null) {
        keys.close();
      }
      throw e;
    }
    Jobs jobs = new Jobs(engine, store, config, rows, storeConfig, http.keyMaxPending());
    Jobs.Recovery recovery;
    try {
      recovery =
          jobs.recover(new Settings(engine.model().card(), config, http.modelAliases().keySet()));
    } catch (IOException | RuntimeException e) {
      jobs.close();
      rows.close();
      if (keys != null) {
        keys.close();
      }
      throw e;
    }
    ScheduledExecutorService retention =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "stepweave-retention");
              t.setDaemon(true);
              return t;
            });
    retention.scheduleWithFixedDelay(jobs::sweepQuietly, 1, 1, TimeUnit.SECONDS);

    QueuedThreadPool threads = new QueuedThreadPool(32, 4);
    threads.setName("stepweave-http");
    threads.setVirtualThreadsExecutor(
        VirtualThreads.getNamedVirtualThreadsExecutor("stepweave-call"));
    Server jetty = new Server(threads);
    HttpConfiguration protocol = new HttpConfiguration();
    protocol.setSendServerVersion(false);
    protocol.setSendXPoweredBy(false);
    HeaderDeadline deadline = new HeaderDeadline(http.headerTimeout());
    jetty.addBean(deadline);
    ServerConnector publicConnector = connector(jetty, protocol, host, port, http, deadline);
    ServerConnector adminConnector =
        connector(jetty, protocol, http.adminHost(), http.adminPort(), http, deadline);
    jetty.addBean(new NetworkConnectionLimit(http.maxConnections(), publicConnector));
    jetty.addBean(new NetworkConnectionLimit(http.maxAdminConnections(), adminConnector));
    jetty.setErrorHandler(new JsonErrorHandler());
    if (http.accessLog() != null) {
      RequestLogWriter writer =
          http.accessLog().equals("-")
              ? new RequestLogWriter()
              : new RequestLogWriter(http.accessLog());
      writer.setAppend(true);
      jetty.setRequestLog(new CustomRequestLog(writer, ACCESS_LOG_FORMAT));
    }

    StepweaveServer[] self = new StepweaveServer[1];
    Gatekeeper gate = new Gatekeeper(keys, http, host);
    Api[] api = new Api[1];
    Metrics metrics = new Metrics(engine, jobs, () -> api[0].openStreams());
    api[0] =
        new Api(
            engine,
            jobs,
            config,
            http,
            gate,
            metrics,
            () -> self[0].closing,
            () -> self[0].drain());
    jetty.setHandler(
        new Handler.Abstract() {
          @Override
          public boolean handle(Request request, Response response, Callback callback) {
            boolean admin = request.getConnectionMetaData().getConnector() == adminConnector;
            api[0].handle(new Call(request, response, callback, http.bodyTimeout()), admin);
            return true;
          }
        });
    self[0] =
        new StepweaveServer(
            jetty,
            publicConnector,
            adminConnector,
            jobs,
            store,
            config,
            rows,
            recovery,
            retention,
            keys);
    try {
      jetty.start();
    } catch (IOException e) {
      self[0].stop();
      throw e;
    } catch (Exception e) {
      self[0].stop();
      throw new IOException("the HTTP server did not start: " + e.getMessage(), e);
    }
    return self[0];
  }

  private static ServerConnector connector(
      Server jetty,
      HttpConfiguration protocol,
      String host,
      int port,
      HttpConfig http,
      HeaderDeadline deadline) {
    ServerConnector c =
        new ServerConnector(
            jetty,
            1,
            1,
            new HttpConnectionFactory(protocol),
            new HTTP2CServerConnectionFactory(protocol));
    c.setHost(host);
    c.setPort(port);
    c.setIdleTimeout(http.idleTimeout().toMillis());
    c.addEventListener(deadline);
    jetty.addConnector(c);
    return c;
  }

  /** Without keys, anyone who reaches the port is served: only loopback unless told otherwise. */
  private static void refuseOpenBind(String host, String flag, boolean insecure)
      throws IOException {
    if (InetAddress.getByName(host).isLoopbackAddress()) {
      return;
    }
    if (!insecure) {
      throw new IllegalArgumentException(
          flag
              + " "
              + host
              + " is not a loopback address and no --api-key-file is given: anyone who reaches"
              + " it could run, list and delete every job; give --api-key-file, or"
              + " --insecure-bind to serve everyone anyway");
    }
    LOG.log(
        System.Logger.Level.WARNING,
        "*** INSECURE: serving "
            + host
            + " WITHOUT API KEYS: anyone who reaches this address can run, list and delete every"
            + " job ***");
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
    return new InetSocketAddress(publicConnector.getHost(), publicConnector.getLocalPort());
  }

  /** {@code http://host:port} as bound. */
  public URI baseUri() {
    return uri(publicConnector);
  }

  /** The admin connector's {@code http://host:port}: health, readiness, metrics and drain. */
  public URI adminUri() {
    return uri(adminConnector);
  }

  private static URI uri(ServerConnector c) {
    String host = c.getHost();
    return URI.create(
        "http://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + c.getLocalPort());
  }

  /** Whether SIGHUP rereads the API key file (false without one, or where the JVM keeps it). */
  public boolean keysReloadOnSignal() {
    return keys != null && keys.reloadsOnSignal();
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
    try {
      jetty.stop();
    } catch (Exception e) {
      LOG.log(System.Logger.Level.WARNING, "the HTTP server did not stop cleanly: " + e);
    }
    retention.shutdownNow();
    jobs.close();
    rows.close();
    if (keys != null) {
      keys.close();
    }
  }

  @Override
  public void close() {
    stop();
  }
}

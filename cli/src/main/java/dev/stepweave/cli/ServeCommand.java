package dev.stepweave.cli;

import dev.stepweave.core.extend.AdapterRegistry;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.extend.RegisteredAdapter;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.EngineConfig;
import dev.stepweave.models.wan.WanLoadOptions;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.models.wan.WanPoolRecovery;
import dev.stepweave.models.wan.cache.WanCaches;
import dev.stepweave.models.wan.embedded.EmbeddedWan;
import dev.stepweave.server.HttpConfig;
import dev.stepweave.server.ServerConfig;
import dev.stepweave.server.StepweaveServer;
import dev.stepweave.server.StoreConfig;
import dev.stepweave.tensor.Precision;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code stepweave serve}: the HTTP API (docs/server.md) over one loaded model. */
@Command(
    name = "serve",
    mixinStandardHelpOptions = true,
    description = {
      "Serves an OpenAI-compatible HTTP API: POST /v1/videos, GET /v1/videos/{id}[/content|/events],"
          + " DELETE /v1/videos/{id}, POST /v1/images/generations, GET /v1/models,"
          + " POST /v1/loras/rescan, /health, /ready, /metrics.",
      "Without --model it serves the small embedded model, trained here on shapes captions"
          + " such as 'a red ball moving left on a black background'.",
      "Jobs are kept in a database in --artifacts (or the PostgreSQL --store): a restart on the"
          + " same directory lists finished jobs and resumes running ones from their checkpoints.",
      "On SIGTERM (or Ctrl-C) it stops admitting new jobs (503), lets running ones finish (up to"
          + " --drain-timeout; then they stop at a step boundary and resume after the restart),"
          + " keeps serving reads until every finished video was downloaded once (bounded by the"
          + " same timeout), and exits.",
      ""
    })
final class ServeCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Option(
      names = "--model",
      paramLabel = "DIR",
      description = "A diffusers-format Wan 2.1 T2V checkpoint.")
  Path model;

  @Option(
      names = "--host",
      defaultValue = "127.0.0.1",
      paramLabel = "ADDR",
      description = "Address to listen on (default: ${DEFAULT-VALUE}).")
  String host;

  @Option(
      names = "--port",
      defaultValue = "8000",
      paramLabel = "N",
      description = "Port to listen on; 0 picks a free one (default: ${DEFAULT-VALUE}).")
  int port;

  @Option(
      names = "--artifacts",
      paramLabel = "DIR",
      description =
          "Where finished videos, checkpoints and the job database are kept; restart on the same"
              + " directory to keep the jobs (default: a new temporary directory).")
  Path artifacts;

  @Option(
      names = "--store",
      paramLabel = "JDBC_URL",
      description =
          "A jdbc:postgresql://HOST/DB?user=… database that several replicas share for job"
              + " metadata (default: SQLite in --artifacts).")
  String store;

  @Option(
      names = "--replica-id",
      defaultValue = StoreConfig.LOCAL,
      paramLabel = "NAME",
      description =
          "This replica's name in a shared --store; each replica needs its own"
              + " (default: ${DEFAULT-VALUE}).")
  String replicaId;

  @Option(
      names = "--checkpoint-interval",
      defaultValue = "5s",
      paramLabel = "DURATION",
      description =
          "Least time between two checkpoint files of a running job, each written at a step"
              + " boundary; 0s writes one after every step (default: ${DEFAULT-VALUE}).")
  String checkpointInterval;

  @Option(
      names = "--artifact-ttl",
      paramLabel = "DURATION",
      description =
          "Remove finished videos this long after they were written, e.g. 7d, 12h (default:"
              + " keep).")
  String artifactTtl;

  @Option(
      names = "--max-artifact-bytes",
      paramLabel = "N",
      description =
          "Most bytes of finished videos kept; the oldest go first, e.g. 20g (default: no"
              + " limit).")
  String maxArtifactBytes;

  @Option(
      names = "--drain-await-downloads",
      negatable = true,
      defaultValue = "true",
      fallbackValue = "true",
      description =
          "On shutdown, keep serving reads until every finished video was downloaded once, up to"
              + " --drain-timeout (default: on; --no-drain-await-downloads ends with the jobs).")
  boolean drainAwaitsDownloads;

  @Option(
      names = "--max-pending",
      defaultValue = "64",
      paramLabel = "N",
      description = "Jobs queued or running at once; more get 429 (default: ${DEFAULT-VALUE}).")
  int maxPending;

  @Option(
      names = "--drain-timeout",
      defaultValue = "600",
      paramLabel = "SECONDS",
      description =
          "On shutdown, how long running jobs may take before they are cancelled (default:"
              + " ${DEFAULT-VALUE}).")
  long drainSeconds;

  @Option(
      names = "--enable-cache",
      split = ",",
      paramLabel = "ID",
      description = {
        "Cache plugins requests may turn on (field cache): dbcache, fbcache (block caches,"
            + " cache-dit style; TaylorSeer is their taylorseer_order parameter), stepcache"
            + " (TeaCache-style). Comma-separated or repeated; default: none."
      })
  List<String> enabledCaches = List.of();

  @Option(
      names = "--cache-default",
      paramLabel = "ID.KEY=VALUE",
      description = {
        "The deployment's default for an enabled cache's parameter, repeatable, e.g."
            + " dbcache.threshold=0.12 (a request's own value still wins)."
      })
  List<String> cacheDefaults = List.of();

  @Option(
      names = "--lora-dir",
      paramLabel = "DIR",
      description = {
        "Registers every *.safetensors in DIR as an adapter (LoRA) requests may name, under its"
            + " file name without the extension; repeatable. POST /v1/loras/rescan rereads it."
      })
  List<Path> loraDirs = List.of();

  @Option(
      names = "--lora",
      paramLabel = "NAME=FILE",
      description = "Registers one adapter file under NAME; repeatable.")
  List<String> loras = List.of();

  @Option(
      names = "--admin-host",
      defaultValue = "127.0.0.1",
      paramLabel = "ADDR",
      description =
          "Address of the admin connector: /health, /ready, /metrics and POST /admin/drain, with"
              + " connections of its own (default: ${DEFAULT-VALUE}).")
  String adminHost;

  @Option(
      names = "--admin-port",
      defaultValue = "0",
      paramLabel = "N",
      description = "Port of the admin connector; 0 picks a free one (default: ${DEFAULT-VALUE}).")
  int adminPort;

  @Option(
      names = "--max-connections",
      defaultValue = "1024",
      paramLabel = "N",
      description = "Open connections on the public port (default: ${DEFAULT-VALUE}).")
  int maxConnections;

  @Option(
      names = "--header-timeout",
      defaultValue = "10",
      paramLabel = "SECONDS",
      description = "Time a request's line and headers may take (default: ${DEFAULT-VALUE}).")
  long headerSeconds;

  @Option(
      names = "--body-timeout",
      defaultValue = "60",
      paramLabel = "SECONDS",
      description = "Time a request's body may take; 408 beyond (default: ${DEFAULT-VALUE}).")
  long bodySeconds;

  @Option(
      names = "--idle-timeout",
      defaultValue = "30",
      paramLabel = "SECONDS",
      description = "Time a connection may stay silent (default: ${DEFAULT-VALUE}).")
  long idleSeconds;

  @Option(
      names = "--access-log",
      paramLabel = "FILE",
      description = "Appends one line per call to FILE ('-': standard error); default: none.")
  String accessLog;

  @Option(
      names = "--api-key-file",
      paramLabel = "FILE",
      description = {
        "API keys, one per line, an optional label after whitespace ('admin' marks the admin"
            + " key), # comments; reread on SIGHUP. Every call but /health and /ready then needs"
            + " 'Authorization: Bearer KEY', and each key sees only its own jobs."
      })
  Path apiKeyFile;

  @Option(
      names = "--insecure-bind",
      description = "Serve a non-loopback --host without --api-key-file (anyone can use it).")
  boolean insecureBind;

  @Option(
      names = "--cors-origin",
      paramLabel = "ORIGIN",
      description = "An origin (https://app.example) whose pages may call the API; repeatable.")
  List<String> corsOrigins = List.of();

  @Option(
      names = "--allowed-host",
      paramLabel = "NAME",
      description =
          "A name the Host header may carry besides loopback and --host (a proxy's public name);"
              + " repeatable.")
  List<String> allowedHosts = List.of();

  @Option(
      names = "--key-rate",
      defaultValue = "10",
      paramLabel = "PER_SECOND",
      description = "Calls per second per API key, sustained (default: ${DEFAULT-VALUE}).")
  double keyRate;

  @Option(
      names = "--key-burst",
      defaultValue = "40",
      paramLabel = "N",
      description =
          "Calls per API key at once before --key-rate applies (default: ${DEFAULT-VALUE}).")
  int keyBurst;

  @Option(
      names = "--key-max-pending",
      defaultValue = "16",
      paramLabel = "N",
      description = "Jobs per API key queued or running (default: ${DEFAULT-VALUE}).")
  int keyMaxPending;

  @Option(
      names = "--key-max-streams",
      defaultValue = "8",
      paramLabel = "N",
      description = "Event streams per API key open at once (default: ${DEFAULT-VALUE}).")
  int keyMaxStreams;

  @Option(
      names = "--model-alias",
      paramLabel = "NAME=CARD",
      description =
          "Another name for the served card's model id (CARD), for clients that hard-code one"
              + " (sora-2, dall-e-3); repeatable.")
  List<String> modelAliases = List.of();

  @picocli.CommandLine.Mixin BackendOption backendOption;

  @picocli.CommandLine.Mixin DeviceBudget deviceBudget;

  @picocli.CommandLine.Mixin CostLimitOptions costLimits;

  @Override
  public Integer call() throws Exception {
    Serving serving = start(spec.commandLine().getOut(), spec.commandLine().getErr());
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  serving.close();
                  stopped.countDown();
                },
                "stepweave-drain"));
    stopped.await();
    return StepweaveCli.ExitCodes.OK;
  }

  /** Loads the model and starts serving; closing drains, stops, and unloads. */
  Serving start(PrintWriter out, PrintWriter err) throws IOException {
    if (port < 0 || port > 65535) {
      throw new IllegalArgumentException("--port must be between 0 and 65535, got " + port);
    }
    deviceBudget.check();
    costLimits.check();
    HttpConfig http = httpConfig();
    Path dir = model;
    if (dir == null) {
      dir = EmbeddedWan.ensure();
      err.println("stepweave: no --model given; serving " + EmbeddedWan.NOTE);
    }
    StoreConfig storeConfig =
        StoreConfig.defaults()
            .withDatabaseUrl(store)
            .withReplicaId(replicaId)
            .withCheckpointInterval(
                SizesAndDurations.duration("--checkpoint-interval", checkpointInterval))
            .withArtifactTtl(
                artifactTtl == null
                    ? null
                    : SizesAndDurations.duration("--artifact-ttl", artifactTtl))
            .withMaxArtifactBytes(
                maxArtifactBytes == null
                    ? 0
                    : SizesAndDurations.bytes("--max-artifact-bytes", maxArtifactBytes))
            .withDrainAwaitingDownloads(drainAwaitsDownloads);
    ServerConfig config =
        ServerConfig.defaults()
            .withArtifactDir(artifacts)
            .withMaxPendingJobs(maxPending)
            .withDrainTimeout(Duration.ofSeconds(drainSeconds));
    Extensions.Builder deployment =
        WanCaches.enable(
            Extensions.builder(),
            enabledCaches.stream().map(String::strip).toList(),
            GenerationOptions.parseSettings(cacheDefaults, "--cache-default", "ID"));
    Map<String, Path> namedLoras = LoraArguments.named(loras);
    WanLoadOptions loadOptions = deviceBudget.loadOptions();
    WanModel wan = WanModel.load(dir, backendOption.open(err, Precision.BF16), loadOptions);
    Extensions extensions;
    Engine engine;
    try {
      // Every adapter file is inspected by the loaded model: one it cannot apply stops the start.
      extensions =
          deployment
              .adapters(AdapterRegistry.open(wan::inspectAdapter, namedLoras, loraDirs))
              .build();
      Path weights = dir;
      EngineConfig engineConfig =
          EngineConfig.builder()
              .costLimits(costLimits.limits(wan.backend().device().kind()))
              // A pool-fatal fault: a new backend, the weights again from the host.
              .recovery(
                  new WanPoolRecovery(
                      weights, () -> backendOption.open(err, Precision.BF16), loadOptions))
              .build();
      engine = new Engine(wan, deviceBudget.apply(engineConfig, wan, err), extensions);
    } catch (RuntimeException e) {
      wan.close();
      throw e;
    }
    StepweaveServer server;
    try {
      server = StepweaveServer.start(host, port, engine, config, http, storeConfig);
    } catch (IOException | RuntimeException e) {
      engine.close();
      wan.close();
      throw e;
    }
    err.println("stepweave: " + costLimits.describe(engine.config().costLimits()));
    err.println("stepweave: job store: " + server.recoverySummary());
    out.println(
        "serving "
            + wan.card().modelId()
            + " on "
            + server.baseUri()
            + " (admin "
            + server.adminUri()
            + (apiKeyFile == null
                ? "; no API keys"
                : "; API keys from "
                    + apiKeyFile
                    + (server.keysReloadOnSignal() ? ", reread on SIGHUP" : ", read once"))
            + "; artifacts in "
            + server.artifactDir()
            + ")"
            + (extensions.plugins().isEmpty()
                ? ""
                : "; caches: " + String.join(", ", extensions.plugins().keySet()))
            + (extensions.adapters().list().isEmpty()
                ? ""
                : "; loras: "
                    + String.join(
                        ", ",
                        extensions.adapters().list().stream()
                            .map(RegisteredAdapter::name)
                            .toList())));
    out.flush();
    return new Serving(wan, engine, server, err);
  }

  private HttpConfig httpConfig() {
    if (adminPort < 0 || adminPort > 65535) {
      throw new IllegalArgumentException(
          "--admin-port must be between 0 and 65535, got " + adminPort);
    }
    return new HttpConfig.Builder()
        .admin(adminHost, adminPort)
        .maxConnections(maxConnections, HttpConfig.defaults().maxAdminConnections())
        .timeouts(
            seconds("--header-timeout", headerSeconds),
            seconds("--body-timeout", bodySeconds),
            seconds("--idle-timeout", idleSeconds))
        .accessLog(accessLog)
        .apiKeyFile(apiKeyFile)
        .insecureBind(insecureBind)
        .corsOrigins(corsOrigins)
        .allowedHosts(allowedHosts)
        .keyRate(keyRate, keyBurst)
        .keyLimits(keyMaxPending, keyMaxStreams)
        .modelAliases(aliases())
        .build();
  }

  private Map<String, String> aliases() {
    Map<String, String> out = new java.util.LinkedHashMap<>();
    for (String a : modelAliases) {
      int eq = a.indexOf('=');
      if (eq <= 0 || eq == a.length() - 1) {
        throw new IllegalArgumentException("--model-alias must be NAME=CARD, got '" + a + "'");
      }
      if (out.put(a.substring(0, eq), a.substring(eq + 1)) != null) {
        throw new IllegalArgumentException(
            "--model-alias " + a.substring(0, eq) + " is given twice");
      }
    }
    return out;
  }

  private static Duration seconds(String flag, long value) {
    if (value < 1) {
      throw new IllegalArgumentException(flag + " must be at least 1 second, got " + value);
    }
    return Duration.ofSeconds(value);
  }

  /** A running server and what it serves. */
  record Serving(WanModel wan, Engine engine, StepweaveServer server, PrintWriter err)
      implements AutoCloseable {
    /** Stops admitting, lets running jobs finish (or cancels them at the timeout), and unloads. */
    @Override
    public void close() {
      err.println("stepweave: draining: no new jobs; waiting for running ones");
      err.flush();
      boolean clean = server.drain();
      if (!clean) {
        err.println("stepweave: drain timeout reached; unfinished jobs were cancelled");
      }
      server.stop();
      engine.close();
      // The instance serving now: after a pool-fatal fault, the one the recovery loaded.
      if (engine.model() instanceof WanModel current) {
        current.close();
      }
      err.println("stepweave: stopped");
      err.flush();
    }
  }
}

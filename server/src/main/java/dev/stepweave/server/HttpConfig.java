package dev.stepweave.server;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * How the server meets the network: its connectors, deadlines and connection limits, the access
 * log, and the tenants (API keys, per-key limits, Host and Origin checks). {@link ServerConfig}
 * bounds what one call may ask of the engine; this bounds what clients may hold of the server.
 *
 * @param adminHost where the admin connector listens (health, readiness and metrics only)
 * @param adminPort its port; 0 picks a free one
 * @param maxConnections open connections on the public connector; more wait in the accept backlog
 * @param maxAdminConnections open connections on the admin connector, counted apart, so the public
 *     connector's clients can never take them
 * @param headerTimeout how long a request's line and headers may take to arrive
 * @param bodyTimeout how long a request's whole body may take to arrive (408 beyond)
 * @param idleTimeout how long a connection may stay silent
 * @param accessLog where one line per call goes: a file, "-" for standard error, null for none
 * @param apiKeyFile the API key file; null serves without keys (loopback only)
 * @param insecureBind serve without keys on a non-loopback address
 * @param corsOrigins origins whose pages may call the API (CORS); others get 403
 * @param allowedHosts extra names a {@code Host} header may carry besides loopback and the bound
 *     address
 * @param keyRatePerSecond calls per second per key, sustained
 * @param keyBurst calls per key at once before the rate applies
 * @param keyMaxPending jobs per key queued or running
 * @param keyMaxStreams event streams per key open at once
 * @param modelAliases other model names clients may use, each for the served card's id (names
 *     clients hard-code, e.g. {@code sora-2})
 */
public record HttpConfig(
    String adminHost,
    int adminPort,
    int maxConnections,
    int maxAdminConnections,
    Duration headerTimeout,
    Duration bodyTimeout,
    Duration idleTimeout,
    String accessLog,
    Path apiKeyFile,
    boolean insecureBind,
    List<String> corsOrigins,
    List<String> allowedHosts,
    double keyRatePerSecond,
    int keyBurst,
    int keyMaxPending,
    int keyMaxStreams,
    Map<String, String> modelAliases) {

  public HttpConfig {
    modelAliases = Map.copyOf(modelAliases);
    corsOrigins = List.copyOf(corsOrigins);
    allowedHosts = List.copyOf(allowedHosts);
    if (adminPort < 0 || adminPort > 65535) {
      throw new IllegalArgumentException("the admin port must be 0-65535, got " + adminPort);
    }
    atLeastOne("max connections", maxConnections);
    atLeastOne("max admin connections", maxAdminConnections);
    atLeastOne("key burst", keyBurst);
    atLeastOne("key max pending", keyMaxPending);
    atLeastOne("key max streams", keyMaxStreams);
    if (!(keyRatePerSecond > 0) || Double.isInfinite(keyRatePerSecond)) {
      throw new IllegalArgumentException(
          "the key rate must be a positive number of calls per second, got " + keyRatePerSecond);
    }
    for (Duration d : List.of(headerTimeout, bodyTimeout, idleTimeout)) {
      if (d.isNegative() || d.isZero()) {
        throw new IllegalArgumentException("HTTP timeouts must be positive, got " + d);
      }
    }
    for (String origin : corsOrigins) {
      if (!origin.matches("https?://[^/\\s]+")) {
        throw new IllegalArgumentException(
            "a CORS origin is scheme://host[:port] without a path, got '" + origin + "'");
      }
    }
  }

  private static void atLeastOne(String what, int value) {
    if (value < 1) {
      throw new IllegalArgumentException(what + " must be at least 1, got " + value);
    }
  }

  /**
   * Admin connector on a free loopback port (32 connections), 1024 public connections, 10 s for
   * headers, 60 s for a body, 30 s idle, no access log, no keys, 10 calls/s per key (burst 40), 16
   * pending jobs and 8 event streams per key.
   */
  public static HttpConfig defaults() {
    return new Builder().build();
  }

  public Builder toBuilder() {
    return new Builder(this);
  }

  /** A config changed in a few places. */
  public static final class Builder {
    private String adminHost = "127.0.0.1";
    private int adminPort;
    private int maxConnections = 1024;
    private int maxAdminConnections = 32;
    private Duration headerTimeout = Duration.ofSeconds(10);
    private Duration bodyTimeout = Duration.ofSeconds(60);
    private Duration idleTimeout = Duration.ofSeconds(30);
    private String accessLog;
    private Path apiKeyFile;
    private boolean insecureBind;
    private List<String> corsOrigins = List.of();
    private List<String> allowedHosts = List.of();
    private double keyRatePerSecond = 10;
    private int keyBurst = 40;
    private int keyMaxPending = 16;
    private int keyMaxStreams = 8;
    private Map<String, String> modelAliases = Map.of();

    public Builder() {}

    private Builder(HttpConfig c) {
      adminHost = c.adminHost;
      adminPort = c.adminPort;
      maxConnections = c.maxConnections;
      maxAdminConnections = c.maxAdminConnections;
      headerTimeout = c.headerTimeout;
      bodyTimeout = c.bodyTimeout;
      idleTimeout = c.idleTimeout;
      accessLog = c.accessLog;
      apiKeyFile = c.apiKeyFile;
      insecureBind = c.insecureBind;
      corsOrigins = c.corsOrigins;
      allowedHosts = c.allowedHosts;
      keyRatePerSecond = c.keyRatePerSecond;
      keyBurst = c.keyBurst;
      keyMaxPending = c.keyMaxPending;
      keyMaxStreams = c.keyMaxStreams;
      modelAliases = c.modelAliases;
    }

    public Builder admin(String host, int port) {
      adminHost = host;
      adminPort = port;
      return this;
    }

    public Builder maxConnections(int publicConnections, int adminConnections) {
      maxConnections = publicConnections;
      maxAdminConnections = adminConnections;
      return this;
    }

    public Builder timeouts(Duration header, Duration body, Duration idle) {
      headerTimeout = header;
      bodyTimeout = body;
      idleTimeout = idle;
      return this;
    }

    public Builder accessLog(String target) {
      accessLog = target;
      return this;
    }

    public Builder apiKeyFile(Path file) {
      apiKeyFile = file;
      return this;
    }

    public Builder insecureBind(boolean insecure) {
      insecureBind = insecure;
      return this;
    }

    public Builder corsOrigins(List<String> origins) {
      corsOrigins = origins;
      return this;
    }

    public Builder allowedHosts(List<String> hosts) {
      allowedHosts = hosts;
      return this;
    }

    public Builder keyRate(double perSecond, int burst) {
      keyRatePerSecond = perSecond;
      keyBurst = burst;
      return this;
    }

    public Builder keyLimits(int maxPending, int maxStreams) {
      keyMaxPending = maxPending;
      keyMaxStreams = maxStreams;
      return this;
    }

    public Builder modelAliases(Map<String, String> aliases) {
      modelAliases = aliases;
      return this;
    }

    public HttpConfig build() {
      return new HttpConfig(
          adminHost,
          adminPort,
          maxConnections,
          maxAdminConnections,
          headerTimeout,
          bodyTimeout,
          idleTimeout,
          accessLog,
          apiKeyFile,
          insecureBind,
          corsOrigins,
          allowedHosts,
          keyRatePerSecond,
          keyBurst,
          keyMaxPending,
          keyMaxStreams,
          modelAliases);
    }
  }
}

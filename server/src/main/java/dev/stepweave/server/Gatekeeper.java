package dev.stepweave.server;

import dev.stepweave.server.tenant.KeyRing;
import dev.stepweave.server.tenant.RateLimiter;
import dev.stepweave.server.tenant.Tenant;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.OptionalLong;
import java.util.Set;

/**
 * Who may call, and from where: the {@code Host} a call names (a DNS-rebinding page names its own
 * host), the {@code Origin} of a browser's call (a cross-site form post names the foreign site),
 * the caller's API key, and its rate. Health and readiness probes pass without any of it: they
 * reveal nothing and must never be refused.
 */
final class Gatekeeper {
  /** The request attribute the access log reads the caller's label from. */
  static final String TENANT_ATTRIBUTE = "stepweave.tenant";

  private static final String BEARER = "bearer ";

  private final KeyRing keys;
  private final RateLimiter rate;
  private final Set<String> hosts;
  private final List<String> corsOrigins;

  /**
   * @param keys the API keys, or null to serve everyone as {@link Tenant#ANONYMOUS}
   * @param boundHost the address the public connector listens on; a wildcard turns the Host check
   *     off unless {@code allowedHosts} names hosts
   */
  Gatekeeper(KeyRing keys, HttpConfig http, String boundHost) {
    this.keys = keys;
    this.rate = new RateLimiter(http.keyRatePerSecond(), http.keyBurst());
    this.corsOrigins = http.corsOrigins();
    String bound = hostName(boundHost);
    boolean wildcard = bound.equals("0.0.0.0") || bound.equals("[::]") || bound.equals("[::0]");
    if (wildcard && http.allowedHosts().isEmpty()) {
      hosts = null;
    } else {
      Set<String> h = new HashSet<>(List.of("localhost", "127.0.0.1", "[::1]"));
      h.add(bound);
      http.allowedHosts().forEach(name -> h.add(hostName(name)));
      hosts = Set.copyOf(h);
    }
  }

  /**
   * The tenant a call acts for.
   *
   * @param probe a health or readiness call, which needs nothing
   * @throws ApiException 403 for a foreign Host or Origin, 401 without a valid key, 429 over the
   *     key's rate
   */
  Tenant admit(Call call, boolean probe) {
    if (probe) {
      return Tenant.ANONYMOUS;
    }
    Tenant visitor = visitor(call);
    if (keys == null || preflight(call)) {
      return visitor;
    }
    if (call.request().getHeaders().getValuesList("Authorization").size() > 1) {
      throw unauthorized("invalid_api_key", "send one Authorization header, not several");
    }
    Tenant tenant = tenant(call.header("Authorization"));
    OptionalLong wait = rate.acquire(tenant.id());
    if (wait.isPresent()) {
      throw new ApiException(
          429,
          "requests",
          null,
          "rate_limit_exceeded",
          "rate limit of this key reached; retry in " + wait.getAsLong() + " s",
          wait.getAsLong());
    }
    return tenant;
  }

  /**
   * A call that needs no key (the playground's files): only its Host and Origin are checked.
   *
   * @throws ApiException 403 for a foreign Host or Origin
   */
  Tenant visitor(Call call) {
    String host = call.header("Host");
    if (host == null) {
      host = call.request().getHttpURI().getAuthority();
    }
    if (hosts != null && (host == null || !hosts.contains(hostName(host)))) {
      throw ApiException.forbidden(
          "host_not_allowed",
          "Host '" + host + "' is not this server's name (allow it with --allowed-host)");
    }
    String origin = call.header("Origin");
    if (origin != null && !sameOrigin(origin, host) && !corsOrigins.contains(origin)) {
      throw ApiException.forbidden(
          "origin_not_allowed",
          "pages from origin '"
              + origin
              + "' may not call this server (allow it with --cors-origin)");
    }
    if (origin != null && corsOrigins.contains(origin)) {
      call.setHeader("Access-Control-Allow-Origin", origin);
      call.setHeader("Vary", "Origin");
      call.setHeader(
          "Access-Control-Expose-Headers", "Retry-After, Stepweave-Schema, Content-Range");
    }
    return Tenant.ANONYMOUS;
  }

  /**
   * Whether the call is a CORS preflight from an allowed origin; if so its answer's headers are set
   * (the caller sends an empty 204).
   */
  boolean preflight(Call call) {
    String origin = call.header("Origin");
    if (!call.method().equals("OPTIONS")
        || origin == null
        || !corsOrigins.contains(origin)
        || call.header("Access-Control-Request-Method") == null) {
      return false;
    }
    call.setHeader("Access-Control-Allow-Methods", "GET, HEAD, POST, DELETE");
    call.setHeader("Access-Control-Allow-Headers", "Authorization, Content-Type, Range");
    call.setHeader("Access-Control-Max-Age", "600");
    return true;
  }

  private Tenant tenant(String authorization) {
    if (authorization == null || authorization.isBlank()) {
      throw unauthorized(
          "missing_api_key",
          "no API key: send it as 'Authorization: Bearer KEY' (what OpenAI's clients send)");
    }
    if (!authorization.toLowerCase(Locale.ROOT).startsWith(BEARER)) {
      throw unauthorized("invalid_api_key", "the Authorization header must be 'Bearer KEY'");
    }
    return keys.find(authorization.substring(BEARER.length()).strip())
        .orElseThrow(() -> unauthorized("invalid_api_key", "the API key is not valid"));
  }

  private static ApiException unauthorized(String code, String message) {
    return new ApiException(401, "invalid_request_error", null, code, message);
  }

  /** A page served from this very server (the Host it called) calls it same-origin. */
  private static boolean sameOrigin(String origin, String host) {
    return host != null
        && (origin.equalsIgnoreCase("http://" + host)
            || origin.equalsIgnoreCase("https://" + host));
  }

  /** A Host header's or an address's name without its port, lower case, IPv6 in brackets. */
  static String hostName(String hostAndPort) {
    String h = hostAndPort.strip().toLowerCase(Locale.ROOT);
    if (h.startsWith("[")) {
      int close = h.indexOf(']');
      return close < 0 ? h : h.substring(0, close + 1);
    }
    if (h.indexOf(':') != h.lastIndexOf(':')) {
      return "[" + h + "]"; // a bare IPv6 address, as bound
    }
    int colon = h.indexOf(':');
    return colon < 0 ? h : h.substring(0, colon);
  }
}

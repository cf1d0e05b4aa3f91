package dev.stepweave.server;

import java.util.List;
import java.util.Set;

/**
 * Every route the server answers, with its methods: the table a call is checked against before it
 * is routed (404 for a path no route matches, 405 for a method its route lacks), so a route missing
 * here cannot be reached, and the table {@code OpenApiDriftTest} holds {@code openapi.json} to.
 */
final class Routes {
  /**
   * A route: its path as OpenAPI writes it ({@code {id}} matches one segment) and its methods.
   *
   * @param page served without a key (the playground and the API description; Host and Origin are
   *     still checked)
   */
  record Route(String path, Set<String> methods, boolean page) {
    boolean matches(List<String> segments) {
      List<String> template = segments(path);
      if (template.size() != segments.size()) {
        return false;
      }
      for (int i = 0; i < template.size(); i++) {
        String t = template.get(i);
        if (!t.startsWith("{") && !t.equals(segments.get(i))) {
          return false;
        }
      }
      return true;
    }
  }

  static final List<Route> ALL =
      List.of(
          page("/"),
          page("/playground.js"),
          page("/playground.css"),
          page("/openapi.json"),
          api("/health", "GET"),
          api("/ready", "GET"),
          api("/metrics", "GET"),
          api("/admin/drain", "POST"),
          api("/v1/deployment", "GET"),
          api("/v1/models", "GET"),
          api("/v1/models/{model}", "GET"),
          api("/v1/videos", "GET", "POST"),
          api("/v1/videos/{video_id}", "GET", "DELETE"),
          api("/v1/videos/{video_id}/content", "GET", "HEAD"),
          api("/v1/videos/{video_id}/events", "GET"),
          api("/v1/images/generations", "POST"),
          api("/v1/loras/rescan", "POST"));

  private Routes() {}

  /** The route of a path's segments, or null. */
  static Route of(List<String> segments) {
    for (Route r : ALL) {
      if (r.matches(segments)) {
        return r;
      }
    }
    return null;
  }

  static List<String> segments(String path) {
    return java.util.Arrays.stream(path.split("/")).filter(s -> !s.isEmpty()).toList();
  }

  private static Route page(String path) {
    return new Route(path, Set.of("GET"), true);
  }

  private static Route api(String path, String... methods) {
    return new Route(path, Set.of(methods), false);
  }
}

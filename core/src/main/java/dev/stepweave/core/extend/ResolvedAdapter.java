package dev.stepweave.core.extend;

/**
 * One adapter of a request, resolved against the registry when the request was accepted: which file
 * (by content hash) at which strength. A request runs with these even if the registry is rescanned
 * while it runs.
 */
public record ResolvedAdapter(RegisteredAdapter adapter, double scale) {
  public String name() {
    return adapter.name();
  }

  /** {@code name@version:scale}, e.g. for a graph or cache key. */
  public String identity() {
    return adapter.name() + "@" + adapter.version() + ":" + scale;
  }
}

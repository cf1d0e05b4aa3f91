package dev.stepweave.core.extend;

import dev.stepweave.core.card.ConsistencyRung;
import dev.stepweave.core.card.ModelCard;
import dev.stepweave.core.card.RecipeSpec;
import dev.stepweave.core.parity.TapSink;
import dev.stepweave.core.request.InvalidRequestException;
import dev.stepweave.core.request.Request;
import dev.stepweave.tensor.Tensor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.function.UnaryOperator;

/**
 * The extensions a deployment enables (engine or server configuration, never a request): the
 * plugins requests may parameterise and the observers that watch every loop. Loops assemble their
 * hooks from it when they start, so with nothing enabled nothing is on the hot path.
 */
public final class Extensions {
  /** Recipes that assume this many steps or fewer are few-step distilled. */
  public static final int FEW_STEPS = 8;

  public static final Extensions NONE =
      new Extensions(Map.of(), Map.of(), List.of(), AdapterRegistry.NONE);

  private final Map<String, Plugin> enabled;
  private final Map<String, ParamSchema> schemas;
  private final List<StepObserver> observers;
  private final AdapterRegistry adapters;
  private final ExtensionMetrics metrics = new ExtensionMetrics();

  private Extensions(
      Map<String, Plugin> enabled,
      Map<String, ParamSchema> schemas,
      List<StepObserver> observers,
      AdapterRegistry adapters) {
    this.enabled = Collections.unmodifiableMap(new LinkedHashMap<>(enabled));
    this.schemas = Map.copyOf(schemas);
    this.observers = List.copyOf(observers);
    this.adapters = adapters;
  }

  public static Builder builder() {
    return new Builder();
  }

  public List<StepObserver> observers() {
    return observers;
  }

  /** The adapters requests may name ({@link AdapterRegistry#NONE} when none are registered). */
  public AdapterRegistry adapters() {
    return adapters;
  }

  /** The enabled plugins by id, in the order they were enabled. */
  public Map<String, Plugin> plugins() {
    return enabled;
  }

  /**
   * The schema requests are validated against for an enabled plugin: the plugin's own, with the
   * deployment's defaults where it set any.
   */
  public ParamSchema schema(String pluginId) {
    ParamSchema s = schemas.get(pluginId);
    if (s == null) {
      throw new IllegalArgumentException("plugin '" + pluginId + "' is not enabled");
    }
    return s;
  }

  /** Counters of what the plugins did, summed over requests (for metrics export). */
  public ExtensionMetrics metrics() {
    return metrics;
  }

  /**
   * The plugins a request turns on, validated before any of its loops start: each must be enabled
   * here and allowed by the card, its parameters must fit its schema, no two may own one
   * interception point, an exact request refuses distribution-altering ones, and a few-step
   * distilled recipe refuses ones that reuse computation across steps.
   *
   * @throws InvalidRequestException naming the plugin and the reason
   */
  public List<ActivePlugin> admit(Request request, ModelCard card) {
    List<ActivePlugin> active = new ArrayList<>();
    Map<Plugin.InterceptionPoint, String> owners = new EnumMap<>(Plugin.InterceptionPoint.class);
    for (var e : new java.util.TreeMap<>(request.plugins()).entrySet()) {
      String id = e.getKey();
      Plugin plugin = enabled.get(id);
      if (plugin == null) {
        throw new InvalidRequestException(
            "plugins",
            "plugin '"
                + id
                + "' is not enabled on this deployment (enabled: "
                + (enabled.isEmpty() ? "none" : String.join(", ", new TreeSet<>(enabled.keySet())))
                + ")");
      }
      if (!card.caches().containsKey(id)) {
        throw new InvalidRequestException(
            "plugins", "model '" + card.modelId() + "' does not allow plugin '" + id + "'");
      }
      PluginParams params = schemas.get(id).validate(id, e.getValue());
      String owner = owners.putIfAbsent(plugin.point(), id);
      if (owner != null) {
        throw new InvalidRequestException(
            "plugins",
            "plugins '"
                + owner
                + "' and '"
                + id
                + "' conflict: both intercept "
                + plugin.point().name().toLowerCase(java.util.Locale.ROOT));
      }
      if (request.exact() && plugin.distributionAltering()) {
        throw new InvalidRequestException(
            "exact",
            "an exact request refuses plugin '" + id + "': it alters the output distribution");
      }
      RecipeSpec recipe = card.recipe();
      if (plugin.reusesAcrossSteps() && isFewStepDistilled(recipe)) {
        throw new InvalidRequestException(
            "plugins",
            "model '"
                + card.modelId()
                + "' (recipe '"
                + recipe.method()
                + "', "
                + recipe.assumesSteps()
                + " steps) refuses plugin '"
                + id
                + "': it reuses computation across steps, which few-step distilled weights do not"
                + " tolerate");
      }
      active.add(new ActivePlugin(plugin, params));
    }
    return List.copyOf(active);
  }

  /**
   * The tap sink of one step for the observers that want taps, or {@link TapSink#NONE} when none
   * does (then the component skips tap work entirely).
   */
  public TapSink tapsFor(StepInfo step, UnaryOperator<Tensor> toHost) {
    List<StepObserver> watching = observers.stream().filter(StepObserver::wantsTaps).toList();
    if (watching.isEmpty()) {
      return TapSink.NONE;
    }
    return (name, value) -> {
      TensorView view = new TensorView(value, toHost);
      watching.forEach(o -> o.onTap(step, name, view));
    };
  }

  /** Tells every observer a step ran. */
  public void afterStep(StepInfo step, Duration elapsed) {
    observers.forEach(o -> o.afterStep(step, elapsed));
  }

  /** Tells every observer the scheduler ran a call. */
  public void afterCall(CallInfo call, Duration elapsed) {
    observers.forEach(o -> o.afterCall(call, elapsed));
  }

  /**
   * The consistency rung a run with these plugins is held to: the card's parity rung, loosened to
   * distribution parity (C3) once any plugin alters the output distribution.
   */
  public static ConsistencyRung consistencyOf(List<ActivePlugin> active, ModelCard card) {
    ConsistencyRung tested = card.parity().rung();
    boolean altered = active.stream().anyMatch(a -> a.plugin().distributionAltering());
    return altered && tested.satisfies(ConsistencyRung.C3) ? ConsistencyRung.C3 : tested;
  }

  static boolean isFewStepDistilled(RecipeSpec recipe) {
    return !recipe.method().equals("base")
        && recipe.assumesSteps() != null
        && recipe.assumesSteps() <= FEW_STEPS;
  }

  /** Enables plugins and observers for a deployment and registers its adapters. */
  public static final class Builder {
    private final Map<String, Plugin> enabled = new LinkedHashMap<>();
    private final Map<String, ParamSchema> schemas = new LinkedHashMap<>();
    private final List<StepObserver> observers = new ArrayList<>();
    private AdapterRegistry adapters = AdapterRegistry.NONE;

    public Builder enable(Plugin plugin) {
      return enable(plugin, Map.of());
    }

    /**
     * Enables a plugin with the deployment's own defaults for some of its parameters (a request
     * that names the plugin without them gets these).
     *
     * @throws InvalidRequestException for an unknown parameter or a default out of bounds
     */
    public Builder enable(Plugin plugin, Map<String, String> defaults) {
      if (enabled.putIfAbsent(plugin.id(), plugin) != null) {
        throw new IllegalArgumentException("plugin '" + plugin.id() + "' enabled twice");
      }
      schemas.put(plugin.id(), plugin.schema().withDefaults(plugin.id(), defaults));
      return this;
    }

    public Builder observe(StepObserver observer) {
      observers.add(observer);
      return this;
    }

    public Builder adapters(AdapterRegistry registry) {
      adapters = registry;
      return this;
    }

    public Extensions build() {
      return new Extensions(enabled, schemas, observers, adapters);
    }
  }
}

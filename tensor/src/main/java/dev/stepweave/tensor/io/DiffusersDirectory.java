package dev.stepweave.tensor.io;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * A diffusers pipeline folder: {@code model_index.json} names the components, each in its own
 * sub-folder with a config and (for networks) weights. Opening checks that every listed component
 * has its folder, so a partial download fails at once rather than halfway through loading.
 */
public final class DiffusersDirectory {
  private static final String MODEL_INDEX = "model_index.json";

  /**
   * Where a component keeps its configuration, in order of preference: networks have config.json,
   * schedulers scheduler_config.json, tokenizers their tokenizer.json, image processors
   * preprocessor_config.json.
   */
  private static final List<String> CONFIG_NAMES =
      List.of("config.json", "scheduler_config.json", "tokenizer.json", "preprocessor_config.json");

  private final Path dir;
  private final String pipelineClass;
  private final SortedMap<String, ComponentClass> components;
  private final SortedMap<String, JsonNode> attributes;

  /** The library and class that {@code model_index.json} names for a component. */
  public record ComponentClass(String library, String className) {}

  /**
   * One component: its folder, its parsed configuration, and access to its weights.
   *
   * @param configFile the file {@code config} was read from
   */
  public record Component(
      String name, ComponentClass type, Path dir, Path configFile, JsonNode config) {

    /**
     * Opens the component's weights (one file, sharded, in the standard names); the caller owns and
     * closes the source.
     */
    public TensorSource openWeights() {
      return Checkpoints.open(dir);
    }
  }

  private DiffusersDirectory(
      Path dir,
      String pipelineClass,
      SortedMap<String, ComponentClass> components,
      SortedMap<String, JsonNode> attributes) {
    this.dir = dir;
    this.pipelineClass = pipelineClass;
    this.components = Collections.unmodifiableSortedMap(components);
    this.attributes = Collections.unmodifiableSortedMap(attributes);
  }

  /**
   * Reads {@code dir/model_index.json} and checks that each listed component's folder exists.
   *
   * @throws CheckpointException naming the path that is missing or malformed
   */
  public static DiffusersDirectory open(Path dir) {
    Path indexFile = dir.resolve(MODEL_INDEX);
    if (!Files.isRegularFile(indexFile)) {
      throw new CheckpointException("no " + MODEL_INDEX + " in " + dir);
    }
    JsonNode root = JsonFiles.readObject(indexFile);
    SortedMap<String, ComponentClass> components = new TreeMap<>();
    SortedMap<String, JsonNode> attributes = new TreeMap<>();
    for (Map.Entry<String, JsonNode> e : root.properties()) {
      if (e.getKey().startsWith("_") || !e.getValue().isArray()) {
        attributes.put(e.getKey(), e.getValue()); // _class_name, boundary_ratio, …
        continue;
      }
      ComponentClass type = componentClass(indexFile, e.getKey(), e.getValue());
      if (type == null) {
        continue; // an optional component this checkpoint leaves out, e.g. transformer_2
      }
      if (!Files.isDirectory(dir.resolve(e.getKey()))) {
        throw new CheckpointException(
            indexFile
                + ": component '"
                + e.getKey()
                + "' has no folder "
                + dir.resolve(e.getKey()));
      }
      components.put(e.getKey(), type);
    }
    JsonNode className = root.get("_class_name");
    return new DiffusersDirectory(
        dir,
        className != null && className.isTextual() ? className.textValue() : "",
        components,
        attributes);
  }

  /** {@code [library, class]}, or null for {@code [null, null]}. */
  private static ComponentClass componentClass(Path indexFile, String name, JsonNode entry) {
    if (entry.size() == 2 && entry.get(0).isNull() && entry.get(1).isNull()) {
      return null;
    }
    if (entry.size() != 2 || !entry.get(0).isTextual() || !entry.get(1).isTextual()) {
      throw new CheckpointException(
          indexFile + ": component '" + name + "' is " + entry + ", expected [library, class]");
    }
    return new ComponentClass(entry.get(0).textValue(), entry.get(1).textValue());
  }

  public Path dir() {
    return dir;
  }

  /** The pipeline class ({@code _class_name}), e.g. "WanPipeline"; empty when absent. */
  /**
   * Every entry of {@code model_index.json} that is not a component, by name ({@code _class_name},
   * {@code boundary_ratio}, …): an importer checks each, so none is silently ignored.
   */
  public SortedMap<String, JsonNode> attributes() {
    return attributes;
  }

  public String pipelineClass() {
    return pipelineClass;
  }

  /** Present components by name (optional ones listed as {@code [null, null]} are left out). */
  public SortedMap<String, ComponentClass> components() {
    return components;
  }

  /**
   * The component's folder and parsed configuration.
   *
   * @throws CheckpointException when the component is not listed, or its config is missing or
   *     invalid
   */
  public Component component(String name) {
    ComponentClass type = components.get(name);
    if (type == null) {
      throw new CheckpointException(
          dir.resolve(MODEL_INDEX)
              + ": no component '"
              + name
              + "' (present: "
              + String.join(", ", components.keySet())
              + ")");
    }
    Path componentDir = dir.resolve(name);
    Path configFile =
        CONFIG_NAMES.stream()
            .map(componentDir::resolve)
            .filter(Files::isRegularFile)
            .findFirst()
            .orElseThrow(
                () ->
                    new CheckpointException(
                        componentDir
                            + ": no configuration (looked for "
                            + String.join(", ", CONFIG_NAMES)
                            + ")"));
    return new Component(name, type, componentDir, configFile, JsonFiles.readObject(configFile));
  }
}

package dev.stepweave.core.extend;

import dev.stepweave.core.cache.ContentHash;
import dev.stepweave.core.request.AdapterUse;
import dev.stepweave.core.request.InvalidRequestException;
import dev.stepweave.core.request.Request;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The adapters a deployment offers (deploy scope, design §7.1): files registered one by one ({@code
 * --lora NAME=FILE}) or every {@code *.safetensors} of a directory under its file name without the
 * extension ({@code --lora-dir DIR}). Every file is inspected by the model when it is registered,
 * so a file that does not fit is refused before any request can name it. Requests name adapters,
 * never paths (§11), and {@link #resolve} pins each name to the file's content hash at acceptance.
 *
 * <p>Thread-safe: {@link #rescan} swaps the whole table at once, so a request resolves against one
 * consistent registry.
 */
public final class AdapterRegistry {
  /** Names requests may use: a file name without its extension, no path separators. */
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");

  private static final String EXTENSION = ".safetensors";
  private static final String RECIPE_SUFFIX = ".recipe.json";

  /** A registry with nothing registered (requests that name an adapter are refused). */
  public static final AdapterRegistry NONE =
      new AdapterRegistry(AdapterInspector.NONE, Map.of(), List.of());

  private final AdapterInspector inspector;
  private final Map<String, Path> named;
  private final List<Path> directories;
  private volatile Map<String, RegisteredAdapter> table;

  private AdapterRegistry(
      AdapterInspector inspector, Map<String, Path> named, List<Path> directories) {
    this.inspector = inspector;
    this.named = Map.copyOf(named);
    this.directories = List.copyOf(directories);
    this.table = Map.of();
  }

  /**
   * Registers the given files and directories, inspecting every file.
   *
   * @param named name → file ({@code --lora NAME=FILE})
   * @param directories directories whose {@code *.safetensors} register under their file names
   * @throws InvalidAdapterException for a bad name, a missing file, two files under one name, or a
   *     file the model refuses (the message names it)
   */
  public static AdapterRegistry open(
      AdapterInspector inspector, Map<String, Path> named, List<Path> directories) {
    AdapterRegistry r = new AdapterRegistry(inspector, named, directories);
    r.table = r.scan();
    return r;
  }

  /** Every registered adapter, by name (sorted). */
  public List<RegisteredAdapter> list() {
    return List.copyOf(table.values());
  }

  public Optional<RegisteredAdapter> get(String name) {
    return Optional.ofNullable(table.get(name));
  }

  /** What a {@link #rescan} changed, by name. */
  public record Changes(List<String> added, List<String> removed, List<String> changed) {
    public Changes {
      added = List.copyOf(added);
      removed = List.copyOf(removed);
      changed = List.copyOf(changed);
    }
  }

  /**
   * Reads the files and directories again: new files register, deleted ones leave, rewritten ones
   * (a new hash) are re-inspected. All or nothing: when any file is refused the registry stays as
   * it was and the error names the file. Requests already accepted keep the files they resolved.
   */
  public synchronized Changes rescan() {
    Map<String, RegisteredAdapter> before = table;
    Map<String, RegisteredAdapter> after = scan();
    List<String> added = new ArrayList<>();
    List<String> changed = new ArrayList<>();
    for (var e : after.entrySet()) {
      RegisteredAdapter old = before.get(e.getKey());
      if (old == null) {
        added.add(e.getKey());
      } else if (!old.sha256().equals(e.getValue().sha256())
          || !old.file().equals(e.getValue().file())) {
        changed.add(e.getKey());
      }
    }
    List<String> removed = before.keySet().stream().filter(n -> !after.containsKey(n)).toList();
    table = after;
    return new Changes(added, removed, changed);
  }

  /**
   * The request's adapters against this registry, in the request's order.
   *
   * @throws InvalidRequestException naming {@code loras[i].name} for a name not registered
   */
  public List<ResolvedAdapter> resolve(Request request) {
    Map<String, RegisteredAdapter> now = table;
    List<ResolvedAdapter> out = new ArrayList<>();
    List<AdapterUse> uses = request.adapters();
    for (int i = 0; i < uses.size(); i++) {
      AdapterUse use = uses.get(i);
      RegisteredAdapter a = now.get(use.name());
      if (a == null) {
        throw new InvalidRequestException(
            "loras[" + i + "].name",
            "unknown adapter '"
                + use.name()
                + "' (registered: "
                + (now.isEmpty() ? "none" : String.join(", ", now.keySet()))
                + ")");
      }
      out.add(new ResolvedAdapter(a, use.scale()));
    }
    return List.copyOf(out);
  }

  private Map<String, RegisteredAdapter> scan() {
    Map<String, Path> files = new LinkedHashMap<>();
    for (Path dir : directories) {
      if (!Files.isDirectory(dir)) {
        throw new InvalidAdapterException("adapter directory not found: " + dir);
      }
      try (Stream<Path> s = Files.list(dir)) {
        for (Path f :
            s.filter(p -> p.getFileName().toString().endsWith(EXTENSION)).sorted().toList()) {
          String file = f.getFileName().toString();
          put(files, file.substring(0, file.length() - EXTENSION.length()), f);
        }
      } catch (IOException e) {
        throw new InvalidAdapterException(dir + ": cannot list: " + e.getMessage());
      }
    }
    named.forEach((name, file) -> put(files, name, file));
    Map<String, RegisteredAdapter> out = new TreeMap<>();
    for (var e : files.entrySet()) {
      out.put(e.getKey(), register(e.getKey(), e.getValue()));
    }
    return java.util.Collections.unmodifiableMap(out);
  }

  private static void put(Map<String, Path> files, String name, Path file) {
    if (!NAME.matcher(name).matches()) {
      throw new InvalidAdapterException(
          file + ": adapter name '" + name + "' must be letters, digits, '.', '_' or '-'");
    }
    Path previous = files.putIfAbsent(name, file);
    if (previous != null && !previous.equals(file)) {
      throw new InvalidAdapterException(
          "two adapters named '" + name + "': " + previous + " and " + file);
    }
  }

  private RegisteredAdapter register(String name, Path file) {
    if (!Files.isRegularFile(file)) {
      throw new InvalidAdapterException("adapter file not found: " + file);
    }
    if (!file.getFileName().toString().endsWith(EXTENSION)) {
      throw new InvalidAdapterException(file + ": adapters must be .safetensors files (no pickle)");
    }
    try {
      String sha = ContentHash.ofFile(file);
      Path recipeFile = recipeFile(file);
      AdapterInfo info = inspector.inspect(file);
      if (Files.isRegularFile(recipeFile)) {
        // The file beside the adapter wins over the adapter's own metadata: it is the deployment's.
        AdapterRecipe recipe =
            AdapterRecipe.parse(Files.readString(recipeFile), recipeFile.toString());
        info = new AdapterInfo(info.format(), info.rank(), info.targets(), Optional.of(recipe));
      }
      return new RegisteredAdapter(name, file, sha, Files.size(file), info);
    } catch (IOException e) {
      throw new InvalidAdapterException(file + ": cannot read: " + e.getMessage());
    }
  }

  private static Path recipeFile(Path adapter) {
    String f = adapter.getFileName().toString();
    return adapter.resolveSibling(f.substring(0, f.length() - EXTENSION.length()) + RECIPE_SUFFIX);
  }
}

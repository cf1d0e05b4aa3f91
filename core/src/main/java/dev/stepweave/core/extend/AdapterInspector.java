package dev.stepweave.core.extend;

import java.nio.file.Path;

/**
 * Reads an adapter file's header against one model: its format, rank and targets, and its recipe.
 * The model owns this because only it knows its layer names and shapes.
 */
@FunctionalInterface
public interface AdapterInspector {
  /**
   * @throws InvalidAdapterException naming the key or tensor that does not fit the model
   */
  AdapterInfo inspect(Path file);

  /** An inspector for a model that takes no adapters: every file is refused. */
  AdapterInspector NONE =
      file -> {
        throw new InvalidAdapterException(file + ": this model takes no adapters");
      };
}

package dev.stepweave.tensor.io;

import java.util.Optional;

/**
 * The version of one serialised surface (a card, a program checkpoint, a recording) and its
 * reader's rule: a file that declares no version is version 1 (the files written before versions
 * existed stay readable); one newer than this build reads is refused with a one-line error naming
 * the file, the field and both versions, never misread.
 *
 * @param field the name the version is stored under ("schemaVersion", "schema_version")
 * @param current the version this build writes and the newest it reads
 */
public record SchemaVersion(String field, int current) {
  public SchemaVersion {
    if (current < 1) {
      throw new IllegalArgumentException("schema versions start at 1");
    }
  }

  /** The value a writer stores under {@link #field}. */
  public String written() {
    return Integer.toString(current);
  }

  /**
   * Why a declared version cannot be read, or empty when it can.
   *
   * @param declared the stored value, or null when the file has none (version 1)
   */
  public Optional<String> problem(String declared) {
    if (declared == null) {
      return Optional.empty();
    }
    int version;
    try {
      version = Integer.parseInt(declared.strip());
    } catch (NumberFormatException e) {
      return Optional.of(field + " '" + declared + "' is not a version number");
    }
    if (version < 1) {
      return Optional.of(field + " " + version + " is not a version (they start at 1)");
    }
    if (version > current) {
      return Optional.of(
          field + " " + version + " is newer than this build reads (" + current + ")");
    }
    return Optional.empty();
  }

  /**
   * Checks a declared version.
   *
   * @param where the file (or other source) it was read from, for the message
   * @throws UnsupportedSchemaException naming {@code where}, the field and both versions
   */
  public void check(String declared, String where) {
    problem(declared)
        .ifPresent(
            p -> {
              throw new UnsupportedSchemaException(where + ": " + p);
            });
  }

  /** A stored object this build cannot read: its declared schema version is unknown here. */
  public static final class UnsupportedSchemaException extends IllegalArgumentException {
    public UnsupportedSchemaException(String message) {
      super(message);
    }
  }
}

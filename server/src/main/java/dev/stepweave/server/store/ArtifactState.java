package dev.stepweave.server.store;

import java.util.Locale;

/** Whether an indexed artifact's file is there to download. */
public enum ArtifactState {
  /** The file is on disk. */
  PRESENT,
  /** The file was gone when the server reconciled the index with the directory. */
  MISSING,
  /** Retention removed the file (its age passed the TTL, or the directory was over its quota). */
  EXPIRED;

  String column() {
    return name().toLowerCase(Locale.ROOT);
  }

  static ArtifactState of(String column) {
    return valueOf(column.toUpperCase(Locale.ROOT));
  }
}

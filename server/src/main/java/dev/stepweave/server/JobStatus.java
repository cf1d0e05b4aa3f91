package dev.stepweave.server;

import java.util.Locale;

/** A job's status as OpenAI's video object spells it, plus {@code cancelled}. */
enum JobStatus {
  QUEUED,
  IN_PROGRESS,
  COMPLETED,
  FAILED,
  CANCELLED;

  String wireName() {
    return name().toLowerCase(Locale.ROOT);
  }

  static JobStatus fromWire(String name) {
    return valueOf(name.toUpperCase(Locale.ROOT));
  }

  boolean isTerminal() {
    return ordinal() >= COMPLETED.ordinal();
  }
}

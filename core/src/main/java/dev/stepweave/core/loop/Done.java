package dev.stepweave.core.loop;

/** The loop has no more work; the driver calls {@code finalize}. */
public record Done() implements Step {
  public static final Done INSTANCE = new Done();
}

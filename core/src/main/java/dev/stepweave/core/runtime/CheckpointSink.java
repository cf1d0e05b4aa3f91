package dev.stepweave.core.runtime;

/** Receives where a program run stands after every step (to stop and resume it later). */
@FunctionalInterface
public interface CheckpointSink {
  void accept(ProgramCheckpoint checkpoint);
}

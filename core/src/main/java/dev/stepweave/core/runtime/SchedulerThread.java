package dev.stepweave.core.runtime;

/**
 * The one thread that drives an {@link EngineCore}: it waits for work and ticks until closed.
 * Creating it starts nothing; {@link #start} does.
 */
final class SchedulerThread {
  private final EngineCore core;
  private final Thread thread;
  private volatile boolean closed;
  private boolean started;

  SchedulerThread(EngineCore core) {
    this.core = core;
    this.thread = new Thread(this::serve, "stepweave-scheduler");
    thread.setDaemon(true);
  }

  /** Starts ticking, once; does nothing when already started or closed. */
  synchronized void start() {
    if (!started && !closed) {
      started = true;
      thread.start();
    }
  }

  boolean closed() {
    return closed;
  }

  /**
   * Stops after the tick in progress and waits for the thread (unless called from it); the requests
   * left fail.
   */
  void close() {
    boolean running;
    synchronized (this) {
      closed = true;
      running = started;
    }
    core.wake();
    if (!running) {
      core.stopAll(new IllegalStateException("engine closed"));
    } else if (Thread.currentThread() != thread) {
      try {
        thread.join(30_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private void serve() {
    try {
      while (core.awaitWork(() -> closed)) {
        core.tick();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException | Error e) {
      // A bug in the scheduler itself: fail everything rather than leave futures hanging.
      closed = true;
      core.stopAll(e);
      throw e;
    }
    core.stopAll(new IllegalStateException("engine closed"));
  }
}

package dev.stepweave.tensor.cpu;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinTask;
import java.util.concurrent.RecursiveAction;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntConsumer;

/**
 * The backend's fixed set of worker threads. Work is split by the caller into numbered tasks whose
 * results do not depend on which thread runs them, so the thread count never changes a result.
 */
final class WorkPool {
  private final int threads;
  private final ForkJoinPool pool;

  WorkPool(int threads) {
    if (threads < 1) {
      throw new IllegalArgumentException("thread count must be at least 1, got " + threads);
    }
    this.threads = threads;
    this.pool = threads == 1 ? null : new ForkJoinPool(threads);
  }

  int threads() {
    return threads;
  }

  /** Runs {@code task.accept(i)} for every {@code i} in {@code [0, count)}, then returns. */
  void run(int count, IntConsumer task) {
    if (pool == null || count <= 1) {
      for (int i = 0; i < count; i++) {
        task.accept(i);
      }
      return;
    }
    AtomicInteger next = new AtomicInteger();
    int workers = Math.min(threads, count);
    pool.invoke(
        new RecursiveAction() {
          @Override
          protected void compute() {
            List<ForkJoinTask<?>> parts = new ArrayList<>(workers);
            for (int w = 0; w < workers; w++) {
              parts.add(
                  ForkJoinTask.adapt(
                      () -> {
                        for (int i = next.getAndIncrement();
                            i < count;
                            i = next.getAndIncrement()) {
                          task.accept(i);
                        }
                      }));
            }
            invokeAll(parts);
          }
        });
  }

  /**
   * Runs {@code body(start, end)} over {@code [0, n)} cut into chunks of {@code grain} elements.
   * The chunking depends only on {@code n} and {@code grain}, never on the thread count.
   */
  void forRange(long n, long grain, RangeBody body) {
    long chunks = (n + grain - 1) / grain;
    if (chunks > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("too many chunks: " + chunks);
    }
    run(
        (int) chunks,
        c -> {
          long start = c * grain;
          body.accept(start, Math.min(n, start + grain));
        });
  }

  /** A piece of work over {@code [start, end)}. */
  @FunctionalInterface
  interface RangeBody {
    void accept(long start, long end);
  }
}

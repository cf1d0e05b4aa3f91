package dev.stepweave.core.runtime;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.PriorityQueue;

/**
 * The queue of requests waiting for admission, in admission order: higher priority first, then the
 * earlier deadline, then arrival. A preempted request goes back with its original arrival number,
 * so it resumes before requests that came after it. Thread-safe: submitters offer, the scheduler
 * thread takes.
 *
 * @param <T> what is queued
 */
final class RequestScheduler<T> {
  /** A queued item and what orders it. */
  record Entry<T>(T item, int priority, Instant deadline, long arrival) {}

  private static final Comparator<Entry<?>> ORDER =
      Comparator.<Entry<?>>comparingInt(e -> -e.priority())
          .thenComparing(Entry::deadline, Comparator.nullsLast(Comparator.naturalOrder()))
          .thenComparingLong(Entry::arrival);

  private final PriorityQueue<Entry<T>> queue = new PriorityQueue<>(ORDER);
  private long arrivals;

  synchronized Entry<T> offer(T item, int priority, Instant deadline) {
    Entry<T> e = new Entry<>(item, priority, deadline, arrivals++);
    queue.add(e);
    return e;
  }

  /** Puts an entry taken earlier back in its old place. */
  synchronized void requeue(Entry<T> e) {
    queue.add(e);
  }

  /** The waiting entries in admission order. */
  synchronized List<Entry<T>> ordered() {
    List<Entry<T>> all = new ArrayList<>(queue);
    all.sort(ORDER);
    return all;
  }

  synchronized boolean remove(Entry<T> e) {
    return queue.remove(e);
  }

  synchronized int size() {
    return queue.size();
  }
}

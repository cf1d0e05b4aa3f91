package dev.stepweave.core.runtime;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Flow;

/**
 * A replaying event publisher for one request: every subscriber receives all events from the first,
 * in order, whenever it subscribes, and then live events, honouring its demand. Events of a request
 * are few (one per step), so keeping them all is cheap and makes late subscribers safe.
 */
final class EventStream<T> implements Flow.Publisher<T> {
  private final List<T> events = new ArrayList<>();
  private final List<Sub> subscribers = new ArrayList<>();
  private boolean completed;

  @Override
  public void subscribe(Flow.Subscriber<? super T> subscriber) {
    Sub s = new Sub(subscriber);
    synchronized (this) {
      subscribers.add(s);
    }
    subscriber.onSubscribe(s);
    s.drain();
  }

  void publish(T event) {
    List<Sub> targets;
    synchronized (this) {
      if (completed) {
        throw new IllegalStateException("event after completion: " + event);
      }
      events.add(event);
      targets = List.copyOf(subscribers);
    }
    targets.forEach(Sub::drain);
  }

  void complete() {
    List<Sub> targets;
    synchronized (this) {
      completed = true;
      targets = List.copyOf(subscribers);
    }
    targets.forEach(Sub::drain);
  }

  synchronized List<T> snapshot() {
    return List.copyOf(events);
  }

  private final class Sub implements Flow.Subscription {
    private final Flow.Subscriber<? super T> subscriber;
    private long demand;
    private int next;
    private boolean cancelled;
    private boolean done;
    private boolean draining;

    Sub(Flow.Subscriber<? super T> subscriber) {
      this.subscriber = subscriber;
    }

    @Override
    public void request(long n) {
      if (n <= 0) {
        cancel();
        subscriber.onError(
            new IllegalArgumentException("request(" + n + "): demand must be positive"));
        return;
      }
      synchronized (EventStream.this) {
        demand = demand + n < 0 ? Long.MAX_VALUE : demand + n;
      }
      drain();
    }

    @Override
    public void cancel() {
      synchronized (EventStream.this) {
        cancelled = true;
        subscribers.remove(this);
      }
    }

    /**
     * Delivers what demand allows. Only one thread delivers at a time; a call that finds another
     * delivering returns, and the deliverer re-checks before it stops (under the same lock), so no
     * event is left behind.
     */
    void drain() {
      synchronized (EventStream.this) {
        if (draining) {
          return;
        }
        draining = true;
      }
      boolean normalExit = false;
      try {
        while (true) {
          T event = null;
          synchronized (EventStream.this) {
            if (cancelled || done) {
              draining = false;
              normalExit = true;
              return;
            }
            if (next < events.size() && demand > 0) {
              event = events.get(next++);
              demand--;
            } else if (next == events.size() && completed) {
              done = true;
            } else {
              draining = false;
              normalExit = true;
              return;
            }
          }
          if (event == null) {
            subscriber.onComplete();
          } else {
            subscriber.onNext(event);
          }
        }
      } finally {
        if (!normalExit) {
          synchronized (EventStream.this) {
            draining = false;
          }
        }
      }
    }
  }
}

package dev.stepweave.server;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.eclipse.jetty.http.HttpParser;
import org.eclipse.jetty.io.Connection;
import org.eclipse.jetty.server.internal.HttpConnection;
import org.eclipse.jetty.util.component.AbstractLifeCycle;

/**
 * Closes an HTTP/1 connection whose request line and headers take longer than a deadline to arrive.
 * Jetty's idle timeout restarts with every byte, so a client sending one byte a second would hold a
 * connection for ever; this bounds the whole header. The clock runs from the connection's opening
 * for its first request and from the request's first byte for later ones (a kept-alive connection
 * waiting for its next request is idle, not slow). Checked by a sweep every quarter second, so the
 * bound is the deadline plus at most that.
 */
final class HeaderDeadline extends AbstractLifeCycle implements Connection.Listener {
  private static final long SWEEP_MS = 250;

  private final long timeoutNanos;
  private final Map<HttpConnection, Watch> open = new ConcurrentHashMap<>();
  private ScheduledExecutorService sweeper;

  /** Since when a connection has been waiting for a request's headers, for its n-th request. */
  private record Watch(long since, long messages) {}

  HeaderDeadline(Duration timeout) {
    this.timeoutNanos = timeout.toNanos();
  }

  @Override
  protected void doStart() {
    sweeper =
        Executors.newSingleThreadScheduledExecutor(
            r -> Thread.ofPlatform().daemon().name("stepweave-header-deadline").unstarted(r));
    sweeper.scheduleWithFixedDelay(this::sweep, SWEEP_MS, SWEEP_MS, TimeUnit.MILLISECONDS);
  }

  @Override
  protected void doStop() {
    sweeper.shutdownNow();
    open.clear();
  }

  @Override
  public void onOpened(Connection connection) {
    if (connection instanceof HttpConnection http) {
      open.put(http, new Watch(System.nanoTime(), 0));
    }
  }

  @Override
  public void onClosed(Connection connection) {
    if (connection instanceof HttpConnection http) {
      open.remove(http);
    }
  }

  private void sweep() {
    long now = System.nanoTime();
    open.forEach(
        (connection, watch) -> {
          HttpParser parser = connection.getParser();
          long messages = connection.getMessagesIn();
          boolean awaitingFirst = messages == 0 && parser.inHeaderState();
          boolean midHeader = parser.inHeaderState() && !parser.isStart();
          if (!awaitingFirst && !midHeader) {
            open.put(connection, new Watch(-1, messages));
          } else if (watch.since() < 0 || watch.messages() != messages) {
            open.put(connection, new Watch(now, messages));
          } else if (now - watch.since() > timeoutNanos) {
            open.remove(connection);
            connection.getEndPoint().close();
          }
        });
  }
}

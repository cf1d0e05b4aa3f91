package dev.stepweave.cli;

import dev.stepweave.core.request.RequestEvent;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Flow;

/**
 * Shows a request's progress: a live bar with step and ETA on a terminal, plain lines otherwise
 * (logs, CI, pipes).
 */
final class ProgressPrinter implements Flow.Subscriber<RequestEvent> {
  private static final int BAR = 30;

  private final PrintWriter err;
  private final boolean terminal;
  private String liveLoop;

  ProgressPrinter(PrintWriter err, boolean terminal) {
    this.err = err;
    this.terminal = terminal;
  }

  @Override
  public void onSubscribe(Flow.Subscription s) {
    s.request(Long.MAX_VALUE);
  }

  @Override
  public synchronized void onNext(RequestEvent e) {
    switch (e) {
      case RequestEvent.Step s -> step(s);
      case RequestEvent.Cancelled c ->
          line("cancelled in " + c.loopId() + " after " + c.stepsDone() + " steps");
      case RequestEvent.Failed f -> line("failed: " + f.message());
      default -> {}
    }
  }

  private void step(RequestEvent.Step s) {
    double secs = s.elapsed().toNanos() / 1e9;
    double eta = s.step() == 0 ? 0 : secs / s.step() * (s.totalSteps() - s.step());
    String text =
        String.format(
            Locale.ROOT,
            "%-11s %3d/%-3d %6.1fs  ETA %s",
            s.loopId(),
            s.step(),
            s.totalSteps(),
            secs,
            clock(Duration.ofMillis((long) (eta * 1000))));
    if (!terminal) {
      err.println(text);
      err.flush();
      return;
    }
    int filled = s.totalSteps() == 0 ? BAR : BAR * s.step() / s.totalSteps();
    String bar = "#".repeat(filled) + ".".repeat(BAR - filled);
    err.print("\r" + text.replaceFirst(" {2}ETA", " [" + bar + "] ETA") + "\u001b[K");
    liveLoop = s.loopId();
    if (s.step() == s.totalSteps()) {
      err.println();
      liveLoop = null;
    }
    err.flush();
  }

  private void line(String text) {
    if (liveLoop != null) {
      err.println();
      liveLoop = null;
    }
    err.println(text);
    err.flush();
  }

  private static String clock(Duration d) {
    long s = d.toSeconds();
    return String.format(Locale.ROOT, "%02d:%02d", s / 60, s % 60);
  }

  @Override
  public void onError(Throwable t) {}

  @Override
  public synchronized void onComplete() {
    if (liveLoop != null) {
      err.println();
      liveLoop = null;
      err.flush();
    }
  }
}

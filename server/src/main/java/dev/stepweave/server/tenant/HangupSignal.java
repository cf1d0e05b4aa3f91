package dev.stepweave.server.tenant;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * SIGHUP, the Unix convention for "reread your configuration", handed to every subscriber. It uses
 * {@code sun.misc.Signal} (module jdk.unsupported, in every JDK build this project runs on); where
 * the JVM keeps the signal for itself (run with {@code -Xrs}) subscribing reports false and the
 * caller says so, as it does in a process started ignoring SIGHUP ({@code nohup}), where the JVM
 * leaves it ignored. Installing the handler replaces the JVM's default for SIGHUP, which is to
 * exit.
 */
final class HangupSignal {
  private static final List<Runnable> SUBSCRIBERS = new CopyOnWriteArrayList<>();
  private static Boolean installed;

  private HangupSignal() {}

  /**
   * @return true when SIGHUP will run {@code action}
   */
  static synchronized boolean subscribe(Runnable action) {
    if (installed == null) {
      installed = install();
    }
    if (installed) {
      SUBSCRIBERS.add(action);
    }
    return installed;
  }

  static void unsubscribe(Runnable action) {
    SUBSCRIBERS.remove(action);
  }

  private static boolean install() {
    try {
      sun.misc.SignalHandler previous =
          sun.misc.Signal.handle(
              new sun.misc.Signal("HUP"), signal -> SUBSCRIBERS.forEach(Runnable::run));
      // A process started ignoring SIGHUP (nohup) keeps ignoring it: the JVM installs nothing and
      // hands back SIG_IGN, and the signal never reaches the handler.
      return previous != sun.misc.SignalHandler.SIG_IGN;
    } catch (IllegalArgumentException | UnsupportedOperationException e) {
      return false;
    }
  }
}

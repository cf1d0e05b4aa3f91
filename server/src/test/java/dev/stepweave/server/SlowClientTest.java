package dev.stepweave.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Slow clients cannot starve the probes: 300 connections trickling their headers a byte at a time
 * for 30 s, more than the public connector admits, while every health probe on the admin connector
 * answers within 100 ms; and the header and body deadlines cut the trickles off.
 */
@Timeout(120)
class SlowClientTest {
  private static final int TRICKLERS = 300;
  private static final Duration TRICKLE_FOR = Duration.ofSeconds(30);

  /** The bound of every probe, connect to last byte. */
  private static final long PROBE_MAX_MS = 100;

  /** The probe's own connect and read timeouts: long enough to measure a slow answer. */
  private static final int PROBE_TIMEOUT_MS = 2000;

  @TempDir Path tmp;

  private static HttpConfig http() {
    return new HttpConfig.Builder()
        .maxConnections(200, 32)
        .timeouts(Duration.ofSeconds(2), Duration.ofSeconds(2), Duration.ofSeconds(30))
        .build();
  }

  @Test
  void healthAnswersFastWhileThreeHundredClientsTrickle() throws Exception {
    try (Harness h = new Harness(tmp.resolve("artifacts"), http())) {
      URI admin = h.server.adminUri();
      for (int i = 0; i < 30; i++) {
        probe(admin); // warm up
      }
      AtomicBoolean stop = new AtomicBoolean();
      AtomicInteger cut = new AtomicInteger();
      AtomicInteger opened = new AtomicInteger();
      List<Thread> tricklers = new ArrayList<>();
      for (int i = 0; i < TRICKLERS; i++) {
        tricklers.add(
            Thread.ofVirtual().start(() -> trickle(h.server.baseUri(), stop, opened, cut)));
      }
      List<Long> probes = Collections.synchronizedList(new ArrayList<>());
      long end = System.nanoTime() + TRICKLE_FOR.toNanos();
      Harness.sleep(500); // let the tricklers fill the public connector
      while (System.nanoTime() < end) {
        probes.add(probe(admin));
        Harness.sleep(100);
      }
      stop.set(true);
      for (Thread t : tricklers) {
        t.join();
      }
      assertTrue(probes.size() >= 150, "probed " + probes.size() + " times");
      long worst = Collections.max(probes);
      assertTrue(
          worst < PROBE_MAX_MS,
          "slowest of " + probes.size() + " health probes took " + worst + " ms: " + probes);
      assertTrue(opened.get() >= TRICKLERS, "opened " + opened.get());
      // Each trickler would hold its connection for the whole run; the 2 s header deadline cut
      // every one of them several times over.
      assertTrue(cut.get() >= 2 * TRICKLERS, "the header deadline cut " + cut.get() + " of them");
      // and the public connector serves again once they stop
      assertEquals(200, h.get("/v1/models").status());
    }
  }

  @Test
  void aBodyThatTricklesPastTheDeadlineIsA408() throws Exception {
    try (Harness h = new Harness(tmp.resolve("artifacts"), http());
        Socket s = new Socket()) {
      URI base = h.server.baseUri();
      s.connect(new InetSocketAddress(base.getHost(), base.getPort()), 2000);
      s.setSoTimeout(10_000);
      OutputStream out = s.getOutputStream();
      out.write(
          ("POST /v1/videos HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  + "Content-Length: 1000\r\n\r\n{")
              .getBytes(StandardCharsets.US_ASCII));
      out.flush();
      long started = System.nanoTime();
      String answer = "";
      try {
        for (int i = 0; i < 60 && answer.isEmpty(); i++) {
          Harness.sleep(100);
          out.write(' ');
          out.flush();
          if (s.getInputStream().available() > 0) {
            answer = new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
          }
        }
      } catch (IOException e) {
        // closed after the answer: read what came
      }
      if (answer.isEmpty()) {
        answer = new String(readSome(s.getInputStream()), StandardCharsets.UTF_8);
      }
      long tookMs = (System.nanoTime() - started) / 1_000_000;
      assertTrue(answer.startsWith("HTTP/1.1 408 "), answer);
      assertTrue(answer.contains("\"code\":\"request_timeout\""), answer);
      assertTrue(answer.contains("the request body did not arrive within 2 s"), answer);
      assertTrue(tookMs >= 1900 && tookMs < 5000, "answered after " + tookMs + " ms");
    }
  }

  private static byte[] readSome(InputStream in) {
    try {
      return in.readAllBytes();
    } catch (IOException e) {
      return new byte[0];
    }
  }

  /** One GET /health on a fresh connection, connect to last byte, in milliseconds. */
  private static long probe(URI admin) throws IOException {
    long start = System.nanoTime();
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(admin.getHost(), admin.getPort()), PROBE_TIMEOUT_MS);
      s.setSoTimeout(PROBE_TIMEOUT_MS);
      s.getOutputStream()
          .write(
              "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
                  .getBytes(StandardCharsets.US_ASCII));
      String answer = new String(s.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
      assertTrue(
          answer.startsWith("HTTP/1.1 200 ") && answer.endsWith("{\"status\":\"ok\"}"), answer);
    }
    return (System.nanoTime() - start) / 1_000_000;
  }

  /** Sends a request's headers a byte every 200 ms, reconnecting whenever the server cuts it. */
  private static void trickle(
      URI base, AtomicBoolean stop, AtomicInteger opened, AtomicInteger cut) {
    byte[] request =
        ("GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + "s".repeat(500))
            .getBytes(StandardCharsets.US_ASCII);
    while (!stop.get()) {
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress(base.getHost(), base.getPort()), 1000);
        opened.incrementAndGet();
        OutputStream out = s.getOutputStream();
        InputStream in = s.getInputStream();
        for (int i = 0; !stop.get(); i = (i + 1) % request.length) {
          out.write(request[i]);
          out.flush();
          if (in.available() > 0 || s.isInputShutdown()) {
            break;
          }
          Thread.sleep(200);
        }
      } catch (IOException e) {
        if (!stop.get()) {
          cut.incrementAndGet();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }
}

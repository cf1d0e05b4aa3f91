package dev.stepweave.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.stepweave.core.request.RequestEvent;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;

/**
 * A job's events as Server-Sent Events: every engine event from the first (replayed for late
 * subscribers), then one {@code video.<status>} event carrying the final video object once the
 * output is written, then the stream ends.
 */
final class EventStreamResponse {
  private static final long TICK_MS = 500;
  private static final int KEEPALIVE_TICKS = 30;
  private static final Object END = new Object();

  private final Call exchange;
  private final Job job;
  private final BooleanSupplier closing;
  private long sequence;

  EventStreamResponse(Call exchange, Job job, BooleanSupplier closing) {
    this.exchange = exchange;
    this.job = job;
    this.closing = closing;
  }

  void send() throws IOException {
    BlockingQueue<Object> queue = new LinkedBlockingQueue<>();
    Flow.Subscription[] subscription = new Flow.Subscription[1];
    job.events()
        .subscribe(
            new Flow.Subscriber<RequestEvent>() {
              @Override
              public void onSubscribe(Flow.Subscription s) {
                subscription[0] = s;
                s.request(Long.MAX_VALUE);
              }

              @Override
              public void onNext(RequestEvent e) {
                queue.add(e);
              }

              @Override
              public void onError(Throwable t) {
                queue.add(END);
              }

              @Override
              public void onComplete() {
                queue.add(END);
              }
            });
    exchange.setHeader("Cache-Control", "no-cache");
    exchange.setHeader(ApiJson.SCHEMA_HEADER, ApiJson.SCHEMA_VERSION);
    try (OutputStream out = exchange.stream(200, "text/event-stream; charset=utf-8")) {
      if (relayEngineEvents(queue, out) && awaitFinished(out)) {
        write(out, "video." + job.status().wireName(), ApiJson.video(job));
      }
    } finally {
      subscription[0].cancel();
    }
  }

  /** True when the engine's stream ended, false when the server is closing. */
  private boolean relayEngineEvents(BlockingQueue<Object> queue, OutputStream out)
      throws IOException {
    int idle = 0;
    while (true) {
      Object next = poll(queue);
      if (next == END) {
        return true;
      }
      if (next instanceof RequestEvent e) {
        write(out, e.type(), ApiJson.event(e));
        idle = 0;
      } else if (closing.getAsBoolean()) {
        return false;
      } else if (++idle == KEEPALIVE_TICKS) {
        keepAlive(out);
        idle = 0;
      }
    }
  }

  private boolean awaitFinished(OutputStream out) throws IOException {
    int idle = 0;
    while (true) {
      try {
        job.finished().get(TICK_MS, TimeUnit.MILLISECONDS);
        return true;
      } catch (TimeoutException e) {
        if (closing.getAsBoolean()) {
          return false;
        }
        if (++idle == KEEPALIVE_TICKS) {
          keepAlive(out);
          idle = 0;
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      } catch (ExecutionException e) {
        throw new IllegalStateException("a job's finish future failed", e);
      }
    }
  }

  private static Object poll(BlockingQueue<Object> queue) {
    try {
      return queue.poll(TICK_MS, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return END;
    }
  }

  private void write(OutputStream out, String type, JsonNode data) throws IOException {
    String frame =
        "id: "
            + sequence++
            + "\nevent: "
            + type
            + "\ndata: "
            + Json.MAPPER.writeValueAsString(data)
            + "\n\n";
    out.write(frame.getBytes(StandardCharsets.UTF_8));
    out.flush();
  }

  private static void keepAlive(OutputStream out) throws IOException {
    out.write(": keep-alive\n\n".getBytes(StandardCharsets.UTF_8));
    out.flush();
  }
}

package dev.stepweave.server;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.URLDecoder;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.eclipse.jetty.http.HttpException;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.content.ResourceHttpContent;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.ResourceService;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.resource.ResourceFactory;

/**
 * One HTTP call on Jetty's core API, used blocking from its virtual thread: the request line and
 * headers, the body read within a deadline and a size bound, and the ways the API answers (JSON, an
 * OpenAI-shaped error, text, a file with {@code Range} and {@code HEAD}, an event stream).
 */
final class Call {
  /** Reads the whole file for Range/HEAD/conditional requests (Jetty's own implementation). */
  private static final ResourceService FILES = files();

  private final Request request;
  private final Response response;
  private final Callback callback;
  private final Duration bodyTimeout;
  private boolean handedOver;

  /** The body was read to its end, or given up on (too large, too slow, broken). */
  private boolean bodyDone;

  /** The most of an unread body an error answer reads and drops first (see drainUnread). */
  private static final long UNREAD_LIMIT = 1 << 20;

  Call(Request request, Response response, Callback callback, Duration bodyTimeout) {
    this.request = request;
    this.response = response;
    this.callback = callback;
    this.bodyTimeout = bodyTimeout;
  }

  private static ResourceService files() {
    ResourceService s = new ResourceService();
    s.setAcceptRanges(true);
    s.setDirAllowed(false);
    s.setEtags(true);
    return s;
  }

  Request request() {
    return request;
  }

  String method() {
    return request.getMethod();
  }

  String rawPath() {
    return request.getHttpURI().getPath();
  }

  /** The first value of a request header, or null. */
  String header(String name) {
    return request.getHeaders().get(name);
  }

  void setHeader(String name, String value) {
    response.getHeaders().put(name, value);
  }

  Map<String, String> query() {
    Map<String, String> q = new HashMap<>();
    String raw = request.getHttpURI().getQuery();
    if (raw == null) {
      return q;
    }
    for (String pair : raw.split("&")) {
      int eq = pair.indexOf('=');
      if (eq > 0) {
        try {
          q.put(
              URLDecoder.decode(pair.substring(0, eq), StandardCharsets.UTF_8),
              URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
        } catch (IllegalArgumentException e) {
          throw ApiException.badRequest(null, "malformed query parameter");
        }
      }
    }
    return q;
  }

  /**
   * The whole body, refusing (413) one larger than {@code maxBytes} without buffering more than
   * that, and (408) one that does not arrive within the body deadline. A modestly oversized body is
   * read and discarded first, so that the client, still sending, receives the 413 instead of a
   * reset connection. A compressed body is refused (415): nothing here inflates, and guessing would
   * parse garbage.
   */
  byte[] readBody(int maxBytes) throws IOException {
    String encoding = header("Content-Encoding");
    if (encoding != null && !encoding.strip().equalsIgnoreCase("identity")) {
      throw new ApiException(
          415,
          "invalid_request_error",
          null,
          "unsupported_content_encoding",
          "Content-Encoding '"
              + encoding.strip()
              + "' is not supported; send the body uncompressed");
    }
    long deadline = System.nanoTime() + bodyTimeout.toNanos();
    long declared = request.getLength();
    if (declared > maxBytes) {
      discard(declared <= 4L * maxBytes ? declared : 0, deadline);
      bodyDone = true;
      throw tooLarge(maxBytes);
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    while (true) {
      Content.Chunk chunk = next(deadline);
      try {
        ByteBuffer b = chunk.getByteBuffer();
        if (out.size() + b.remaining() > maxBytes) {
          if (!chunk.isLast()) {
            discard(4L * maxBytes, deadline);
          }
          bodyDone = true;
          throw tooLarge(maxBytes);
        }
        byte[] bytes = new byte[b.remaining()];
        b.get(bytes);
        out.write(bytes);
        if (chunk.isLast()) {
          bodyDone = true;
          return out.toByteArray();
        }
      } finally {
        chunk.release();
      }
    }
  }

  private void discard(long limit, long deadline) throws IOException {
    long read = 0;
    while (read < limit) {
      Content.Chunk chunk = next(deadline);
      try {
        read += chunk.remaining();
        if (chunk.isLast()) {
          bodyDone = true;
          return;
        }
      } finally {
        chunk.release();
      }
    }
  }

  /**
   * The next chunk of the body, waiting for it at most until {@code deadline} (System.nanoTime).
   */
  private Content.Chunk next(long deadline) throws IOException {
    while (true) {
      Content.Chunk chunk = request.read();
      if (chunk != null) {
        if (Content.Chunk.isFailure(chunk)) {
          bodyDone = true;
          if (chunk.getFailure() instanceof HttpException bad) {
            // A framing error of the client's (bad chunk size, early end), not a lost connection.
            setHeader("Connection", "close");
            throw new ApiException(
                bad.getCode(),
                "invalid_request_error",
                null,
                JsonErrorHandler.code(bad.getCode()),
                JsonErrorHandler.message(bad.getCode(), bad.getReason()));
          }
          throw new IOException("the request body could not be read", chunk.getFailure());
        }
        return chunk;
      }
      CountDownLatch ready = new CountDownLatch(1);
      request.demand(ready::countDown);
      long left = deadline - System.nanoTime();
      try {
        if (left <= 0 || !ready.await(left, TimeUnit.NANOSECONDS)) {
          bodyDone = true;
          setHeader("Connection", "close");
          throw new ApiException(
              408,
              "invalid_request_error",
              null,
              "request_timeout",
              "the request body did not arrive within " + bodyTimeout.toSeconds() + " s");
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted while reading the body", e);
      }
    }
  }

  private static ApiException tooLarge(int maxBytes) {
    return new ApiException(
        413,
        "invalid_request_error",
        null,
        "request_too_large",
        "request body is larger than " + maxBytes + " bytes");
  }

  void sendJson(int status, Object body) throws IOException {
    setHeader(ApiJson.SCHEMA_HEADER, ApiJson.SCHEMA_VERSION);
    sendBytes(status, "application/json", Json.MAPPER.writeValueAsBytes(body));
  }

  void sendError(ApiException e) throws IOException {
    if (e.status() == 429 || e.status() == 503) {
      setHeader("Retry-After", Long.toString(e.retryAfterSeconds()));
    }
    if (e.status() == 401) {
      setHeader("WWW-Authenticate", "Bearer");
    }
    sendJson(e.status(), errorBody(e.message(), e.type(), e.param(), e.code()));
  }

  /**
   * Reads and drops a body of at most {@link #UNREAD_LIMIT} bytes that nothing read, before any
   * answer starts: a call refused before its body is parsed (401, 404, 405, 429…), or one whose
   * route ignores it (a rescan's {@code {}}). Answered with the body unread, an HTTP/2 stream is
   * reset (RST_STREAM), and a client still sending it gets an I/O error instead of the answer; over
   * HTTP/1.1 the connection could not be reused.
   */
  private void drainUnread() {
    if (bodyDone) {
      return;
    }
    bodyDone = true;
    long declared = request.getLength();
    if (declared == 0 || declared > UNREAD_LIMIT) {
      return;
    }
    try {
      discard(UNREAD_LIMIT, System.nanoTime() + bodyTimeout.toNanos());
    } catch (ApiException | IOException e) {
      // The error goes out anyway; what the client sends later is its own business.
    }
  }

  /** OpenAI's error object: {@code {"error": {"message", "type", "param", "code"}}}. */
  static ObjectNode errorBody(String message, String type, String param, String code) {
    ObjectNode body = Json.MAPPER.createObjectNode();
    ObjectNode error = body.putObject("error");
    error.put("message", message);
    error.put("type", type);
    error.put("param", param);
    error.put("code", code);
    return body;
  }

  void sendText(int status, String contentType, String text) throws IOException {
    sendBytes(status, contentType, text.getBytes(StandardCharsets.UTF_8));
  }

  /**
   * A file, by Jetty's resource service: {@code Range} (206 with {@code Content-Range}, 416 when
   * unsatisfiable), {@code HEAD}, {@code ETag} and {@code Last-Modified} preconditions. The service
   * completes the call itself; {@code done} then learns whether the whole file went out.
   */
  void sendFile(String contentType, Path file, Consumer<Boolean> done) {
    drainUnread();
    handedOver = true;
    Callback ended =
        Callback.from(
            () -> {
              try {
                done.accept(wholeFileSent());
              } finally {
                callback.succeeded();
              }
            },
            failure -> {
              try {
                done.accept(false);
              } finally {
                callback.failed(failure);
              }
            });
    FILES.doGet(
        request,
        response,
        ended,
        new ResourceHttpContent(ResourceFactory.root().newResource(file), contentType));
  }

  /** A GET answered 200: the whole body, not a range, a HEAD or a 304. */
  private boolean wholeFileSent() {
    return method().equals("GET") && response.getStatus() == 200;
  }

  /** The response body as a stream, for an answer written as it happens (an event stream). */
  OutputStream stream(int status, String contentType) {
    drainUnread();
    response.setStatus(status);
    setHeader("Content-Type", contentType);
    return Content.Sink.asOutputStream(response);
  }

  void sendBytes(int status, String contentType, byte[] bytes) throws IOException {
    drainUnread();
    response.setStatus(status);
    setHeader("Content-Type", contentType);
    response.getHeaders().put(HttpHeader.CONTENT_LENGTH, bytes.length);
    Callback.Completable written = new Callback.Completable();
    response.write(true, ByteBuffer.wrap(bytes), written);
    try {
      written.get();
    } catch (ExecutionException e) {
      throw new IOException("the response could not be written", e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while writing the response", e);
    }
  }

  boolean committed() {
    return response.isCommitted();
  }

  /** Ends the call: Jetty's callback, unless a file send took it over. */
  void finish(Throwable failure) {
    if (handedOver) {
      return;
    }
    if (failure == null) {
      callback.succeeded();
    } else {
      callback.failed(failure);
    }
  }
}

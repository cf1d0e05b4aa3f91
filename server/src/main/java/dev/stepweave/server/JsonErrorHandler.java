package dev.stepweave.server;

import java.io.IOException;
import java.nio.ByteBuffer;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.handler.ErrorHandler;
import org.eclipse.jetty.util.Callback;

/**
 * The answer to every error Jetty itself produces (a malformed request line, oversized headers or
 * URI, an unsatisfiable range, an exception that escaped a handler), in OpenAI's error shape like
 * the API's own errors: never an HTML page, never a Java exception's name.
 */
final class JsonErrorHandler extends ErrorHandler {

  @Override
  public boolean errorPageForMethod(String method) {
    return true;
  }

  @Override
  protected void generateResponse(
      Request request,
      Response response,
      int code,
      String message,
      Throwable cause,
      Callback callback)
      throws IOException {
    byte[] body = body(code, message);
    response.getHeaders().put(HttpHeader.CONTENT_TYPE, "application/json");
    response.getHeaders().put(ApiJson.SCHEMA_HEADER, ApiJson.SCHEMA_VERSION);
    response.write(true, ByteBuffer.wrap(body), callback);
  }

  static byte[] body(int status, String detail) {
    try {
      return Json.MAPPER.writeValueAsBytes(
          Call.errorBody(
              message(status, detail),
              status >= 500 ? "server_error" : "invalid_request_error",
              null,
              code(status)));
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException("an error object did not serialise", e);
    }
  }

  static String code(int status) {
    return switch (status) {
      case 400 -> "bad_request";
      case 404 -> "not_found";
      case 405 -> "method_not_allowed";
      case 408 -> "request_timeout";
      case 413 -> "request_too_large";
      case 414 -> "uri_too_long";
      case 416 -> "range_not_satisfiable";
      case 431 -> "headers_too_large";
      case 500 -> "internal_error";
      case 503 -> "overloaded";
      case 505 -> "http_version_not_supported";
      default -> "http_" + status;
    };
  }

  /**
   * The status's reason, with Jetty's detail when it is a plain phrase ("Illegal character
   * CNTL=0x0"); a detail that names a Java type or spans lines is dropped.
   */
  static String message(int status, String detail) {
    String reason = HttpStatus.getMessage(status);
    String base =
        switch (status) {
          case 400 -> "malformed HTTP request";
          case 414 -> "request URI too long";
          case 416 -> "requested range not satisfiable";
          case 431 -> "request headers too large";
          default -> reason == null ? "HTTP error " + status : reason;
        };
    boolean plain =
        detail != null
            && !detail.isBlank()
            && detail.length() < 200
            && !detail.contains("\n")
            && !detail.contains("Exception")
            && !detail.matches(".*\\b[a-z]+\\.[a-z]+\\.[A-Za-z].*")
            && !detail.equalsIgnoreCase(reason);
    return plain ? base + ": " + detail : base;
  }
}

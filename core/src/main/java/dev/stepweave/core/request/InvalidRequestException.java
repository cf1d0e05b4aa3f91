package dev.stepweave.core.request;

import java.util.Optional;

/**
 * A request that no model can run; the message is one line naming the bad field. Where the field is
 * known as data ({@code "plugins.dbcache.threshold"}, {@code "exact"}) it is also in {@link
 * #field}, so a product can point its own error at the input that caused it.
 */
public final class InvalidRequestException extends IllegalArgumentException {
  private final String field;

  public InvalidRequestException(String message) {
    this(null, message);
  }

  public InvalidRequestException(String field, String message) {
    super(message);
    this.field = field;
  }

  /** The request field at fault, as a dotted path into {@link Request}, when known. */
  public Optional<String> field() {
    return Optional.ofNullable(field);
  }
}

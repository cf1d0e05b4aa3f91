package dev.stepweave.server;

import com.fasterxml.jackson.core.type.TypeReference;
import dev.stepweave.server.store.JobInput;
import dev.stepweave.server.store.JobRow;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * A video job's request as its row keeps it: the fields the client sent, in their order (adapters
 * stack in it), with {@code seed} set to the seed drawn when the client gave none — so that reading
 * it back through {@link Settings#video} gives the very same request. An uploaded image is kept
 * beside it ({@link JobInput}); a data URL is a field like any other.
 */
final class RequestJson {
  private static final TypeReference<LinkedHashMap<String, String>> FIELDS =
      new TypeReference<>() {};

  private RequestJson() {}

  static String write(FormFields.Form form, Settings.Generation g) {
    Map<String, String> fields = new LinkedHashMap<>(form.fields());
    fields.put("seed", Long.toString(g.params().seed()));
    try {
      return Json.MAPPER.writeValueAsString(fields);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The uploaded input file, or null when the call had none. */
  static JobInput upload(FormFields.Form form) {
    Multipart.Upload u = form.files().get(FormFields.INPUT_REFERENCE);
    return u == null ? null : new JobInput(u.contentType(), u.filename(), u.bytes());
  }

  /**
   * The settings of a stored job, as the server's current limits read them.
   *
   * @throws ApiException when those limits now refuse it
   */
  static Settings.Generation read(JobRow row, Optional<JobInput> input, Settings settings) {
    Map<String, String> fields;
    try {
      fields = Json.MAPPER.readValue(row.request(), FIELDS);
    } catch (IOException e) {
      throw new IllegalStateException("the stored request of " + row.id() + " is not JSON", e);
    }
    Map<String, Multipart.Upload> files =
        input
            .map(
                i ->
                    Map.of(
                        FormFields.INPUT_REFERENCE,
                        new Multipart.Upload(i.fileName(), i.contentType(), i.bytes())))
            .orElse(Map.of());
    return settings.video(new FormFields.Form(fields, files));
  }
}

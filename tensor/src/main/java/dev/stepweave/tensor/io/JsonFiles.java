package dev.stepweave.tensor.io;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Strict JSON reading for checkpoint files, with one-line errors naming the file. */
final class JsonFiles {
  /**
   * Duplicate keys and trailing tokens are errors: a header that says two things about one tensor
   * must not silently keep the last.
   */
  static final ObjectMapper MAPPER =
      JsonMapper.builder()
          .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
          .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
          .build();

  private JsonFiles() {}

  /** Reads {@code file}, which must hold a JSON object. */
  static JsonNode readObject(Path file) {
    if (!Files.isRegularFile(file)) {
      throw new CheckpointException(file + ": missing");
    }
    byte[] bytes;
    try {
      bytes = Files.readAllBytes(file);
    } catch (IOException e) {
      throw new CheckpointException(file + ": cannot read (" + e.getMessage() + ")", e);
    }
    return parseObject(bytes, file + "");
  }

  /**
   * Parses {@code json}, which must hold a JSON object.
   *
   * @param where what to name in errors (a file, or a file's header)
   */
  static JsonNode parseObject(byte[] json, String where) {
    JsonNode root;
    try {
      root = MAPPER.readTree(json);
    } catch (JsonProcessingException e) {
      throw new CheckpointException(where + ": not valid JSON (" + e.getOriginalMessage() + ")", e);
    } catch (IOException e) {
      throw new CheckpointException(where + ": cannot parse (" + e.getMessage() + ")", e);
    }
    if (root == null || !root.isObject()) {
      throw new CheckpointException(where + ": expected a JSON object");
    }
    return root;
  }
}

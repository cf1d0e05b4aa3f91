package dev.stepweave.core.card;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.tensor.io.SchemaVersion;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Reads and writes {@code card.json}. The file carries its {@link #SCHEMA} version; a card without
 * one is version 1, and one newer than this build reads is refused, not misread.
 */
public final class CardJson {
  public static final String FILE_NAME = "card.json";
  public static final SchemaVersion SCHEMA = new SchemaVersion("schemaVersion", 1);

  private static final ObjectMapper MAPPER =
      new ObjectMapper()
          .enable(SerializationFeature.INDENT_OUTPUT)
          .enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS)
          .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

  private CardJson() {}

  public static String toJson(ModelCard card) {
    try {
      ObjectNode json = MAPPER.createObjectNode();
      json.put(SCHEMA.field(), SCHEMA.current());
      json.setAll((ObjectNode) MAPPER.valueToTree(card));
      return MAPPER.writeValueAsString(json);
    } catch (IOException e) {
      throw new IllegalStateException("cannot serialise card " + card.modelId(), e);
    }
  }

  /** Parses and validates a card. */
  public static ModelCard fromJson(String json, String where) {
    ModelCard card;
    try {
      var tree = MAPPER.readTree(json);
      if (tree instanceof ObjectNode object && object.has(SCHEMA.field())) {
        var version = object.remove(SCHEMA.field());
        var problem = SCHEMA.problem(version.asText());
        if (problem.isPresent()) {
          throw new InvalidCardException(
              where, List.of(new CardProblem(CardProblem.Code.UNSUPPORTED_SCHEMA, problem.get())));
        }
      }
      card = MAPPER.treeToValue(tree, ModelCard.class);
    } catch (IOException e) {
      String msg =
          e.getMessage() == null ? e.toString() : e.getMessage().lines().findFirst().orElse("");
      throw new InvalidCardException(
          where, List.of(new CardProblem(CardProblem.Code.UNREADABLE, "unreadable card: " + msg)));
    }
    return card.validate(where);
  }

  public static ModelCard read(Path file) {
    try {
      return fromJson(Files.readString(file), file.toString());
    } catch (IOException e) {
      throw new InvalidCardException(
          file.toString(),
          List.of(new CardProblem(CardProblem.Code.UNREADABLE, "cannot read: " + e.getMessage())));
    }
  }

  public static void write(ModelCard card, Path file) throws IOException {
    Files.writeString(file, toJson(card));
  }
}

package dev.stepweave.core.card;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** Reads and writes {@code card.json}. */
public final class CardJson {
  public static final String FILE_NAME = "card.json";

  private static final ObjectMapper MAPPER =
      new ObjectMapper()
          .enable(SerializationFeature.INDENT_OUTPUT)
          .enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS)
          .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

  private CardJson() {}

  public static String toJson(ModelCard card) {
    try {
      return MAPPER.writeValueAsString(card);
    } catch (IOException e) {
      throw new IllegalStateException("cannot serialise card " + card.modelId(), e);
    }
  }

  /** Parses and validates a card. */
  public static ModelCard fromJson(String json, String where) {
    ModelCard card;
    try {
      card = MAPPER.readValue(json, ModelCard.class);
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

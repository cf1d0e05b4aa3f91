package dev.stepweave.core.card;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** card.json carries its schema version and is read by a versioned reader. */
class CardJsonSchemaTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final ModelCard card = ModelCardTestCards.card(RecipeSpec.base());

  @Test
  void aWrittenCardDeclaresTheCurrentVersion() throws Exception {
    var tree = JSON.readTree(CardJson.toJson(card));
    assertEquals(CardJson.SCHEMA.current(), tree.get("schemaVersion").asInt());
    assertEquals(card, CardJson.fromJson(CardJson.toJson(card), "card.json"));
  }

  @Test
  void aCardWithoutAVersionIsVersionOneAndStillReads() throws Exception {
    ObjectNode tree = (ObjectNode) JSON.readTree(CardJson.toJson(card));
    tree.remove("schemaVersion");
    assertEquals(card, CardJson.fromJson(tree.toString(), "card.json"));
  }

  @Test
  void aNewerVersionIsOneLineNamingTheFileTheFieldAndBothVersions(@TempDir Path dir)
      throws Exception {
    ObjectNode tree = (ObjectNode) JSON.readTree(CardJson.toJson(card));
    tree.put("schemaVersion", 2);
    Path file = dir.resolve(CardJson.FILE_NAME);
    Files.writeString(file, tree.toString());
    var e = assertThrows(InvalidCardException.class, () -> CardJson.read(file));
    assertEquals(CardProblem.Code.UNSUPPORTED_SCHEMA, e.problems().getFirst().code());
    assertEquals(file + ": schemaVersion 2 is newer than this build reads (1)", e.getMessage());
    assertTrue(e.getMessage().lines().count() == 1);
  }
}

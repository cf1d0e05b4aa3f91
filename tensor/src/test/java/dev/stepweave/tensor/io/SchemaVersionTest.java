package dev.stepweave.tensor.io;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Optional;
import org.junit.jupiter.api.Test;

class SchemaVersionTest {
  private final SchemaVersion schema = new SchemaVersion("schema_version", 2);

  @Test
  void aMissingVersionIsVersionOneAndEveryKnownVersionReads() {
    assertEquals(Optional.empty(), schema.problem(null));
    assertEquals(Optional.empty(), schema.problem("1"));
    assertEquals(Optional.empty(), schema.problem("2"));
    assertDoesNotThrow(() -> schema.check(null, "f.json"));
    assertEquals("2", schema.written());
  }

  @Test
  void aNewerVersionIsOneLineNamingTheFileTheFieldAndBothVersions() {
    var e =
        assertThrows(
            SchemaVersion.UnsupportedSchemaException.class, () -> schema.check("3", "f.json"));
    assertEquals("f.json: schema_version 3 is newer than this build reads (2)", e.getMessage());
  }

  @Test
  void aVersionThatIsNoNumberIsRefused() {
    assertEquals(
        Optional.of("schema_version 'two' is not a version number"), schema.problem("two"));
    assertEquals(
        Optional.of("schema_version 0 is not a version (they start at 1)"), schema.problem("0"));
  }
}

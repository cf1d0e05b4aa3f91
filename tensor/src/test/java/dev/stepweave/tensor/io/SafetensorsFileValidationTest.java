package dev.stepweave.tensor.io;

import static dev.stepweave.tensor.io.RawSafetensors.assertOneLineNaming;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SafetensorsFileValidationTest {
  @TempDir Path dir;

  private CheckpointException openFails(Path file) {
    return assertThrows(CheckpointException.class, () -> SafetensorsFile.open(file).close());
  }

  private Path withHeader(String header, int dataBytes) throws IOException {
    return RawSafetensors.write(dir.resolve("bad.safetensors"), header, dataBytes);
  }

  @Test
  void fileShorterThanTheLengthPrefixIsTruncated() throws IOException {
    Path file = Files.write(dir.resolve("short.safetensors"), new byte[] {1, 2, 3});
    assertOneLineNaming(openFails(file), file.toString(), "truncated");
  }

  @Test
  void headerLengthBeyondTheFileIsTruncated() throws IOException {
    Path file = withHeader("{}", 0);
    byte[] bytes = Files.readAllBytes(file);
    bytes[0] = 100; // claims a 100-byte header in a 10-byte file
    Files.write(file, bytes);
    assertOneLineNaming(openFails(file), file.toString(), "header length 100", "truncated");
  }

  @Test
  void headerWithHugeUnsignedLengthIsTruncated() throws IOException {
    Path file = withHeader("{}", 0);
    byte[] bytes = Files.readAllBytes(file);
    bytes[7] = (byte) 0x80; // a u64 length beyond any long
    Files.write(file, bytes);
    assertOneLineNaming(openFails(file), file.toString(), "truncated");
  }

  @Test
  void headerThatIsNotJsonIsRejected() throws IOException {
    Path file = withHeader("{\"w\": {\"dtype\": \n\"F32\",", 0);
    assertOneLineNaming(openFails(file), file.toString(), "not valid JSON");
  }

  @Test
  void headerThatIsNotAnObjectIsRejected() throws IOException {
    Path file = withHeader("[1, 2]", 0);
    assertOneLineNaming(openFails(file), file.toString(), "JSON object");
  }

  @Test
  void trailingGarbageAfterTheHeaderObjectIsRejected() throws IOException {
    Path file = withHeader("{} {}", 0);
    assertOneLineNaming(openFails(file), file.toString(), "not valid JSON");
  }

  @Test
  void tensorListedTwiceIsRejected() throws IOException {
    String entry = "{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}";
    Path file = withHeader("{\"w\":" + entry + ",\"w\":" + entry + "}", 1);
    assertOneLineNaming(openFails(file), file.toString(), "w");
  }

  @Test
  void entryWithoutDtypeIsRejected() throws IOException {
    Path file = withHeader("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4);
    assertOneLineNaming(openFails(file), file.toString(), "'w'", "dtype");
  }

  @Test
  void entryThatIsNotAnObjectIsRejected() throws IOException {
    Path file = withHeader("{\"w\":[1,2]}", 0);
    assertOneLineNaming(openFails(file), file.toString(), "'w'");
  }

  @Test
  void unknownDtypeIsRejected() throws IOException {
    Path file =
        withHeader("{\"w\":{\"dtype\":\"F8_E4M3\",\"shape\":[4],\"data_offsets\":[0,4]}}", 4);
    assertOneLineNaming(openFails(file), file.toString(), "'w'", "F8_E4M3");
  }

  @Test
  void negativeDimensionIsRejected() throws IOException {
    Path file =
        withHeader("{\"w\":{\"dtype\":\"F32\",\"shape\":[-1,4],\"data_offsets\":[0,16]}}", 16);
    assertOneLineNaming(openFails(file), file.toString(), "'w'", "negative");
  }

  @Test
  void dimensionBeyondIntIsRejected() throws IOException {
    Path file =
        withHeader("{\"w\":{\"dtype\":\"U8\",\"shape\":[4294967296],\"data_offsets\":[0,4]}}", 4);
    assertOneLineNaming(openFails(file), file.toString(), "'w'", "too large");
  }

  @Test
  void offsetsThatDisagreeWithTheShapeAreRejected() throws IOException {
    Path file =
        withHeader("{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}}", 24);
    assertOneLineNaming(openFails(file), file.toString(), "'w'", "20 bytes", "needs 24");
  }

  @Test
  void offsetsThatEndBeforeTheyBeginAreRejected() throws IOException {
    Path file = withHeader("{\"w\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[8,4]}}", 8);
    assertOneLineNaming(openFails(file), file.toString(), "'w'", "[8,4]");
  }

  @Test
  void negativeOffsetsAreRejected() throws IOException {
    Path file = withHeader("{\"w\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[-4,0]}}", 8);
    assertOneLineNaming(openFails(file), file.toString(), "'w'", "data_offsets");
  }

  @Test
  void offsetsBeyondTheDataSectionAreATruncatedFile() throws IOException {
    Path file =
        withHeader(
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                + "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}",
            20);
    assertOneLineNaming(openFails(file), file.toString(), "'b'", "[8, 24]", "truncated");
  }

  @Test
  void overlappingTensorsAreRejectedNamingBoth() throws IOException {
    Path file =
        withHeader(
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                + "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}",
            20);
    assertOneLineNaming(openFails(file), file.toString(), "'b'", "overlaps", "'a'");
  }

  @Test
  void aTensorInsideALongerOneIsAnOverlapToo() throws IOException {
    Path file =
        withHeader(
            "{\"big\":{\"dtype\":\"U8\",\"shape\":[16],\"data_offsets\":[0,16]},"
                + "\"mid\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]},"
                + "\"tail\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[8,10]}}",
            16);
    assertOneLineNaming(openFails(file), file.toString(), "overlaps", "'big'");
  }

  @Test
  void emptyTensorsSharingAnOffsetAreNotAnOverlap() throws IOException {
    Path file =
        withHeader(
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                + "\"e\":{\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[4,4]}}",
            8);
    try (SafetensorsFile f = SafetensorsFile.open(file)) {
      org.junit.jupiter.api.Assertions.assertEquals(0, f.load("e").numel());
    }
  }

  @Test
  void metadataMustMapStringsToStrings() throws IOException {
    Path file = withHeader("{\"__metadata__\":{\"steps\":6}}", 0);
    assertOneLineNaming(openFails(file), file.toString(), "__metadata__", "steps");
  }

  @Test
  void tensorNamesWithLineBreaksStillGiveOneLine() throws IOException {
    Path file =
        withHeader("{\"evil\\nname\":{\"dtype\":\"X\",\"shape\":[],\"data_offsets\":[0,0]}}", 0);
    assertOneLineNaming(openFails(file), file.toString(), "evil name");
  }

  @Test
  void missingFileIsNamed() {
    Path file = dir.resolve("absent.safetensors");
    assertOneLineNaming(openFails(file), file.toString(), "no such file");
  }

  @Test
  void loadingAnAbsentTensorNamesFileAndTensor() throws IOException {
    Path file = withHeader("{}", 0);
    try (SafetensorsFile f = SafetensorsFile.open(file)) {
      CheckpointException e = assertThrows(CheckpointException.class, () -> f.load("nope"));
      assertOneLineNaming(e, file.toString(), "'nope'");
    }
  }
}

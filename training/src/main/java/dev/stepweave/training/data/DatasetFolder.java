package dev.stepweave.training.data;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

/**
 * A dataset folder: {@value #CAPTIONS} — one JSON object per line with exactly the keys {@code id},
 * {@code caption} and {@code media} ({@link DatasetEntry}) — and the media files it names, inside
 * the folder. Reading is strict: a malformed line, a missing or unknown key, a duplicate id or a
 * media path that is absent or leaves the folder is a one-line error naming the file and line.
 */
public final class DatasetFolder {
  /** The captions file's name inside the folder. */
  public static final String CAPTIONS = "captions.jsonl";

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Set<String> KEYS = Set.of("id", "caption", "media");

  private final Path dir;
  private final List<DatasetEntry> entries;

  private DatasetFolder(Path dir, List<DatasetEntry> entries) {
    this.dir = dir;
    this.entries = List.copyOf(entries);
  }

  /** Reads and checks {@code dir}'s captions file. */
  public static DatasetFolder open(Path dir) {
    Path file = dir.resolve(CAPTIONS);
    if (!Files.isRegularFile(file)) {
      throw new IllegalArgumentException("dataset folder " + dir + " has no " + CAPTIONS);
    }
    List<String> lines;
    try {
      lines = Files.readAllLines(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(file + ": cannot read", e);
    }
    List<DatasetEntry> entries = new ArrayList<>();
    Set<String> ids = new HashSet<>();
    for (int n = 0; n < lines.size(); n++) {
      if (lines.get(n).isBlank()) {
        continue;
      }
      String where = file + " line " + (n + 1);
      DatasetEntry e = entry(lines.get(n), where);
      if (!ids.add(e.id())) {
        throw new IllegalArgumentException(where + ": id '" + e.id() + "' appears twice");
      }
      Path media = dir.resolve(e.media()).normalize();
      if (Path.of(e.media()).isAbsolute() || !media.startsWith(dir.normalize())) {
        throw new IllegalArgumentException(
            where + ": media '" + e.media() + "' must be a path inside the folder");
      }
      if (!Files.exists(media)) {
        throw new IllegalArgumentException(where + ": media '" + e.media() + "' does not exist");
      }
      entries.add(e);
    }
    if (entries.isEmpty()) {
      throw new IllegalArgumentException(file + ": no entries");
    }
    return new DatasetFolder(dir, entries);
  }

  private static DatasetEntry entry(String line, String where) {
    JsonNode node;
    try {
      node = JSON.readTree(line);
    } catch (IOException e) {
      throw new IllegalArgumentException(where + ": not JSON (" + firstLine(e) + ")");
    }
    if (!(node instanceof ObjectNode object)) {
      throw new IllegalArgumentException(where + ": not a JSON object");
    }
    for (Iterator<String> names = object.fieldNames(); names.hasNext(); ) {
      String name = names.next();
      if (!KEYS.contains(name)) {
        throw new IllegalArgumentException(
            where + ": unknown key '" + name + "' (known: id, caption, media)");
      }
    }
    return new DatasetEntry(
        text(object, "id", where), text(object, "caption", where), text(object, "media", where));
  }

  private static String text(ObjectNode object, String key, String where) {
    JsonNode v = object.get(key);
    if (v == null || !v.isTextual() || v.asText().isBlank()) {
      throw new IllegalArgumentException(where + ": '" + key + "' must be a non-empty string");
    }
    return v.asText();
  }

  /** Writes {@code entries} as {@code dir}'s captions file (the media must be there too). */
  public static void writeCaptions(Path dir, List<DatasetEntry> entries) throws IOException {
    StringBuilder out = new StringBuilder();
    for (DatasetEntry e : entries) {
      ObjectNode line = JSON.createObjectNode();
      line.put("id", e.id());
      line.put("caption", e.caption());
      line.put("media", e.media());
      out.append(JSON.writeValueAsString(line)).append('\n');
    }
    Files.writeString(dir.resolve(CAPTIONS), out, StandardCharsets.UTF_8);
  }

  public Path dir() {
    return dir;
  }

  public List<DatasetEntry> entries() {
    return entries;
  }

  /** Where {@code entry}'s media is. */
  public Path media(DatasetEntry entry) {
    return dir.resolve(entry.media()).normalize();
  }

  /**
   * The dataset's content hash, SHA-256 in hex: the captions file's bytes, then each entry's media
   * in order — a file's bytes, a directory's files' names and bytes in name order — so any change
   * to a caption or a pixel changes it.
   */
  public String contentHash() {
    MessageDigest sha = sha256();
    digestFile(sha, dir.resolve(CAPTIONS));
    for (DatasetEntry e : entries) {
      Path media = media(e);
      if (Files.isDirectory(media)) {
        try (Stream<Path> files = Files.list(media)) {
          for (Path f : files.filter(Files::isRegularFile).sorted().toList()) {
            sha.update(f.getFileName().toString().getBytes(StandardCharsets.UTF_8));
            digestFile(sha, f);
          }
        } catch (IOException ex) {
          throw new UncheckedIOException(media + ": cannot list", ex);
        }
      } else {
        digestFile(sha, media);
      }
    }
    return HexFormat.of().formatHex(sha.digest());
  }

  private static void digestFile(MessageDigest sha, Path file) {
    try (InputStream in = new DigestInputStream(Files.newInputStream(file), sha)) {
      in.transferTo(java.io.OutputStream.nullOutputStream());
    } catch (IOException e) {
      throw new UncheckedIOException(file + ": cannot read", e);
    }
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String firstLine(Exception e) {
    String m = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    return m.lines().findFirst().orElse("");
  }
}

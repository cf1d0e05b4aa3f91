package dev.stepweave.media;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Optional;
import javax.imageio.ImageIO;
import javax.imageio.ImageReader;
import javax.imageio.metadata.IIOMetadataNode;
import javax.imageio.stream.ImageInputStream;
import org.jcodec.containers.mp4.MP4Util;
import org.jcodec.containers.mp4.boxes.MetaBox;
import org.jcodec.containers.mp4.boxes.MetaValue;
import org.jcodec.containers.mp4.boxes.MovieBox;
import org.jcodec.containers.mp4.boxes.NodeBox;

/**
 * Reads back the JSON metadata document the {@link OutputFormat} writers store: the PNG {@code
 * iTXt} chunk and the MP4 {@code udta/meta} key named {@value #KEY}, and a GIF's comment. The
 * format is told by the file's first bytes, not its name.
 */
public final class OutputMetadata {
  /** The PNG keyword and MP4 metadata key the document is stored under. */
  public static final String KEY = "stepweave";

  private static final byte[] PNG_SIGNATURE = {(byte) 0x89, 'P', 'N', 'G'};

  private OutputMetadata() {}

  /** What a file holds: its format and, when it carries one, the metadata document. */
  public record Contents(OutputFormat format, Optional<String> metadataJson) {}

  /**
   * The format and metadata of {@code file}.
   *
   * @throws IOException naming the file when it is missing, unreadable, or none of the formats
   */
  public static Contents read(Path file) throws IOException {
    if (!Files.isRegularFile(file)) {
      throw new IOException(file + ": no such file");
    }
    byte[] head = new byte[12];
    int n;
    try (InputStream in = Files.newInputStream(file)) {
      n = in.readNBytes(head, 0, head.length);
    }
    if (n >= 4 && Arrays.equals(head, 0, 4, PNG_SIGNATURE, 0, 4)) {
      return new Contents(OutputFormat.PNG, imageText(file, "png", OutputMetadata::pngText));
    }
    if (n >= 6
        && new String(head, 0, 6, java.nio.charset.StandardCharsets.US_ASCII).startsWith("GIF8")) {
      return new Contents(OutputFormat.GIF, imageText(file, "gif", OutputMetadata::gifComment));
    }
    if (n >= 8
        && new String(head, 4, 4, java.nio.charset.StandardCharsets.US_ASCII).equals("ftyp")) {
      return new Contents(OutputFormat.MP4, mp4Meta(file));
    }
    throw new IOException(file + ": not an MP4, GIF or PNG file");
  }

  private static Optional<String> mp4Meta(Path file) throws IOException {
    MovieBox movie;
    try {
      movie = MP4Util.parseMovie(file.toFile());
    } catch (RuntimeException e) {
      throw new IOException(file + ": unreadable MP4: " + e.getMessage(), e);
    }
    if (movie == null) {
      throw new IOException(file + ": unreadable MP4: no movie box");
    }
    MetaBox meta = NodeBox.findFirstPath(movie, MetaBox.class, new String[] {"udta", "meta"});
    if (meta == null || meta.getKeyedMeta() == null) {
      return Optional.empty();
    }
    MetaValue value = meta.getKeyedMeta().get(KEY);
    return value == null || !value.isString() ? Optional.empty() : Optional.of(value.getString());
  }

  /** Finds the document in an image's first-frame metadata tree. */
  private interface TreeSearch {
    Optional<String> in(IIOMetadataNode root);
  }

  private static Optional<String> imageText(Path file, String format, TreeSearch search)
      throws IOException {
    try (ImageInputStream in = ImageIO.createImageInputStream(file.toFile())) {
      ImageReader reader = ImageIO.getImageReadersByFormatName(format).next();
      try {
        reader.setInput(in, true, false);
        var meta = reader.getImageMetadata(0);
        return search.in((IIOMetadataNode) meta.getAsTree(meta.getNativeMetadataFormatName()));
      } catch (IOException | RuntimeException e) {
        throw new IOException(
            file + ": unreadable " + format.toUpperCase() + ": " + e.getMessage(), e);
      } finally {
        reader.dispose();
      }
    }
  }

  private static Optional<String> pngText(IIOMetadataNode root) {
    var entries = root.getElementsByTagName("iTXtEntry");
    for (int i = 0; i < entries.getLength(); i++) {
      var e = (IIOMetadataNode) entries.item(i);
      if (KEY.equals(e.getAttribute("keyword"))) {
        return Optional.of(e.getAttribute("text"));
      }
    }
    return Optional.empty();
  }

  private static Optional<String> gifComment(IIOMetadataNode root) {
    var comments = root.getElementsByTagName("CommentExtension");
    for (int i = 0; i < comments.getLength(); i++) {
      String value = ((IIOMetadataNode) comments.item(i)).getAttribute("value");
      if (value.startsWith("{")) {
        return Optional.of(value);
      }
    }
    return Optional.empty();
  }
}

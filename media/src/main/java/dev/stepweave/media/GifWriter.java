package dev.stepweave.media;

import dev.stepweave.tensor.Tensor;
import java.io.IOException;
import java.nio.file.Path;
import javax.imageio.IIOImage;
import javax.imageio.ImageIO;
import javax.imageio.ImageTypeSpecifier;
import javax.imageio.ImageWriter;
import javax.imageio.metadata.IIOMetadata;
import javax.imageio.metadata.IIOMetadataNode;
import javax.imageio.stream.ImageOutputStream;

/**
 * Writes {@code [F, H, W, 3]} RGB frames as a looping animated GIF through the JDK's ImageIO GIF
 * writer, which reduces each frame to its own 256-colour palette. The metadata JSON goes into a
 * comment extension of the first frame, its non-ASCII characters as JSON unicode escapes (GIF
 * comments are ASCII text; in a JSON document such characters only occur inside strings, so the
 * escaped document means the same).
 */
public final class GifWriter {
  private static final String IMAGE_METADATA = "javax_imageio_gif_image_1.0";

  private GifWriter() {}

  /** Writes the frames at {@code fps} (GIF delays are whole hundredths of a second), atomically. */
  public static void write(Path target, Tensor frames, int fps, String metadataJson)
      throws IOException {
    if (fps < 1) {
      throw new IllegalArgumentException("fps must be >= 1, got " + fps);
    }
    AtomicOutput.checkFileWritable(target, "video");
    RgbFrames.requireVideo(frames);
    int delay = Math.max(1, Math.round(100f / fps));
    AtomicOutput.writeFile(target, temporary -> encode(temporary, frames, delay, metadataJson));
  }

  private static void encode(Path file, Tensor frames, int delay, String metadataJson)
      throws IOException {
    ImageWriter writer = ImageIO.getImageWritersByFormatName("gif").next();
    try (ImageOutputStream out = ImageIO.createImageOutputStream(file.toFile())) {
      writer.setOutput(out);
      writer.prepareWriteSequence(null);
      for (int f = 0; f < frames.dim(0); f++) {
        var image = PngWriter.toImage(RgbFrames.frame(frames, f), frames.dim(1), frames.dim(2));
        IIOMetadata meta =
            writer.getDefaultImageMetadata(ImageTypeSpecifier.createFromRenderedImage(image), null);
        IIOMetadataNode root = (IIOMetadataNode) meta.getAsTree(IMAGE_METADATA);
        IIOMetadataNode control = child(root, "GraphicControlExtension");
        control.setAttribute("disposalMethod", "none");
        control.setAttribute("userInputFlag", "FALSE");
        control.setAttribute("transparentColorFlag", "FALSE");
        control.setAttribute("delayTime", Integer.toString(delay));
        control.setAttribute("transparentColorIndex", "0");
        if (f == 0) {
          loopForever(root);
          IIOMetadataNode comment = new IIOMetadataNode("CommentExtension");
          comment.setAttribute("value", asciiJson(metadataJson));
          child(root, "CommentExtensions").appendChild(comment);
        }
        meta.setFromTree(IMAGE_METADATA, root);
        writer.writeToSequence(new IIOImage(image, null, meta), null);
      }
      writer.endWriteSequence();
    } finally {
      writer.dispose();
    }
  }

  /** The NETSCAPE2.0 application extension: loop count 0, forever. */
  private static void loopForever(IIOMetadataNode root) {
    IIOMetadataNode app = new IIOMetadataNode("ApplicationExtension");
    app.setAttribute("applicationID", "NETSCAPE");
    app.setAttribute("authenticationCode", "2.0");
    app.setUserObject(new byte[] {1, 0, 0});
    child(root, "ApplicationExtensions").appendChild(app);
  }

  /** The child of {@code root} named {@code name}, added when missing. */
  static IIOMetadataNode child(IIOMetadataNode root, String name) {
    for (int i = 0; i < root.getLength(); i++) {
      if (root.item(i).getNodeName().equalsIgnoreCase(name)) {
        return (IIOMetadataNode) root.item(i);
      }
    }
    IIOMetadataNode node = new IIOMetadataNode(name);
    root.appendChild(node);
    return node;
  }

  /** {@code json} with every non-ASCII character as a JSON unicode escape. */
  static String asciiJson(String json) {
    StringBuilder out = new StringBuilder(json.length());
    for (char c : json.toCharArray()) {
      if (c < 0x80) {
        out.append(c);
      } else {
        out.append(String.format("\\u%04x", (int) c));
      }
    }
    return out.toString();
  }
}

// The README's strip of frames: one row per MP4 (every frame, left to right, each pixel drawn as a
// SCALE x SCALE block), written as one PNG. The MP4s come from ./stepweave generate.
//   java -cp cli/target/stepweave.jar scripts/embedded-default/Strip.java OUT.png SCALE A.mp4 B.mp4 …
import dev.stepweave.media.Mp4Reader;
import dev.stepweave.media.PngWriter;
import dev.stepweave.tensor.Tensor;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

public class Strip {
  public static void main(String[] a) throws Exception {
    int scale = Integer.parseInt(a[1]);
    List<Tensor> videos = new ArrayList<>();
    for (int i = 2; i < a.length; i++) {
      videos.add(Mp4Reader.read(Path.of(a[i])).frames());
    }
    // Every video must have the first one's shape: [F, H, W, 3].
    int[] shape = videos.get(0).shape();
    int frames = shape[0], h = shape[1], w = shape[2];
    int gap = scale; // a black column between frames
    int width = frames * (w * scale + gap) - gap;
    int height = videos.size() * (h * scale + gap) - gap;
    float[] out = new float[height * width * 3];
    for (int v = 0; v < videos.size(); v++) {
      if (!java.util.Arrays.equals(shape, videos.get(v).shape())) {
        throw new IllegalArgumentException(a[v + 2] + ": not the first video's shape");
      }
      float[] px = videos.get(v).toFloatArray();
      for (int f = 0; f < frames; f++) {
        for (int y = 0; y < h * scale; y++) {
          for (int x = 0; x < w * scale; x++) {
            int src = ((f * h + y / scale) * w + x / scale) * 3;
            int dy = v * (h * scale + gap) + y;
            int dx = f * (w * scale + gap) + x;
            System.arraycopy(px, src, out, (dy * width + dx) * 3, 3);
          }
        }
      }
    }
    PngWriter.writeImage(Path.of(a[0]), Tensor.of(out, height, width, 3));
    System.out.println("wrote " + a[0] + " (" + width + "x" + height + ")");
  }
}

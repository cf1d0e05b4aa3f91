// How far apart the frozen text encoder puts captions that differ in one word (docs/training.md,
// "The embedded default"): if a word's change barely moved the embeddings, the DiT could not
// learn it. Relative L2 of the [16, d_model] prompt embeddings, as training and serving compute them.
//   java --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED \
//       -cp cli/target/stepweave.jar scripts/embedded-default/CaptionEmbeddingGap.java MODEL_DIR

import dev.stepweave.models.text.TextEmbeddings;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.nio.file.Path;
import java.util.List;

/** args: modelDir. */
public class CaptionEmbeddingGap {
  public static void main(String[] a) throws Exception {
    String base = "a white square moving left on a black background";
    List<String> oneWordOff =
        List.of(
            "a white square moving right on a black background",
            "a white square moving up on a black background",
            "a white ball moving left on a black background",
            "a red square moving left on a black background",
            "a white square moving left on a gray background");
    try (WanModel model = WanModel.load(Path.of(a[0]), new CpuBackend(2))) {
      float[] b = embedding(model, base);
      System.out.println("against: " + base);
      for (String caption : oneWordOff) {
        float[] e = embedding(model, caption);
        double diff = 0, norm = 0;
        for (int i = 0; i < b.length; i++) {
          diff += (b[i] - e[i]) * (b[i] - e[i]);
          norm += b[i] * b[i];
        }
        System.out.printf("%-52s rel L2 %.4f%n", caption, Math.sqrt(diff / norm));
      }
    }
  }

  private static float[] embedding(WanModel model, String caption) {
    return TextEmbeddings.encodePrompts(model.tokenizer(), model.textEncoder(), List.of(caption), 16)
        .toFloatArray();
  }
}

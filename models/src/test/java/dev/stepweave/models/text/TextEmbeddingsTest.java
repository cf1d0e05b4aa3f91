package dev.stepweave.models.text;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.models.GoldenBounds;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.tensor.io.Weights;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

class TextEmbeddingsTest {
  private static final double TOLERANCE = GoldenBounds.maxAbs("prompt_embeds");

  @Test
  void promptAndNegativePromptEmbeddingsMatchThePipeline() {
    Backend backend = new CpuBackend();
    Path textEncoder = TextGoldens.checkpoint().resolve("text_encoder");
    try (TensorSource weights = SafetensorsFile.open(textEncoder.resolve("model.safetensors"));
        SafetensorsFile pipeline =
            SafetensorsFile.open(TextGoldens.expected("pipeline.safetensors"));
        PromptTokenizer tokenizer =
            PromptTokenizer.load(TextGoldens.checkpoint().resolve("tokenizer"))) {
      UMT5Encoder encoder =
          UMT5Encoder.load(
              UMT5Config.read(textEncoder.resolve("config.json")),
              new Weights(weights, backend, DType.F32));
      int maxLength = Integer.parseInt(pipeline.metadata().get("max_sequence_length"));
      // One batch of two prompts of different real lengths, as classifier-free guidance needs.
      List<String> prompts =
          List.of(pipeline.metadata().get("prompt"), pipeline.metadata().get("negative_prompt"));
      Tensor embeds =
          backend.download(TextEmbeddings.encodePrompts(tokenizer, encoder, prompts, maxLength));
      String[] expectedNames = {"prompt_embeds", "negative_prompt_embeds"};
      for (int row = 0; row < expectedNames.length; row++) {
        Tensor expected = pipeline.loadF32(expectedNames[row]);
        float err = TextGoldens.maxAbsDiff(embeds.slice(0, row, row + 1), expected);
        assertTrue(err <= TOLERANCE, expectedNames[row] + ": max abs error " + err);
        // past the real length the rows are zeros, as the reference pads them (+0, not -0)
        assertEquals(0f, embeds.getFloat(row, maxLength - 1, 0));
      }
    }
  }

  @Test
  void cleaningCollapsesWhitespaceLikeThePipeline() {
    assertEquals("a red ball", TextEmbeddings.cleanPrompt("  a \t red\n\nball\u00a0 "));
  }
}

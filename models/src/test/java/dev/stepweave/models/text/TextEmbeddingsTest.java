package dev.stepweave.models.text;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
  private static final float TOLERANCE = 5e-4f;

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
      for (String[] check :
          new String[][] {{"prompt", "prompt_embeds"}, {"negative_prompt", "negative_prompt_embeds"}}) {
        String prompt = pipeline.metadata().get(check[0]);
        Tensor embeds =
            backend.download(
                TextEmbeddings.encodePrompts(tokenizer, encoder, List.of(prompt), maxLength));
        Tensor expected = pipeline.loadF32(check[1]);
        float err = TextGoldens.maxAbsDiff(embeds, expected);
        assertTrue(err <= TOLERANCE, check[1] + ": max abs error " + err);
        // rows past the real length (8 tokens for the prompt) are exactly zero
        assertEquals(0f, embeds.getFloat(0, maxLength - 1, 0));
      }
    }
  }

  @Test
  void cleaningCollapsesWhitespaceLikeThePipeline() {
    assertEquals("a red ball", TextEmbeddings.cleanPrompt("  a \t red\n\nball\u00a0 "));
  }
}

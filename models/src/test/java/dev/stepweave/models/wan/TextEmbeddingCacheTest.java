package dev.stepweave.models.wan;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.stepweave.core.cache.CacheMetrics;
import dev.stepweave.core.loop.LoopResult;
import dev.stepweave.core.request.Request;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A group of identical prompts runs the text encoder once; a different text length does not hit.
 */
class TextEmbeddingCacheTest {

  @Test
  void identicalPromptsRunTheEncoderOnce() {
    try (WanModel model = WanModel.load(ResumeInNewProcessTest.CHECKPOINT, new CpuBackend())) {
      var loop = (TextEncodeLoop) model.loop(WanCards.TEXT_ENCODE);
      List<LoopResult> results = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        Request r = BlockCacheTest.request("same-" + i, i, Map.of());
        results.add(BlockCacheTest.runLoop(loop, r, model, BlockCacheTest.context(r, Map.of())));
      }
      CacheMetrics m = model.textEmbeddingCache().metrics();
      assertEquals(2, m.misses(), "the prompt and the negative prompt, once each");
      assertEquals(6, m.hits());
      for (LoopResult r : results) {
        assertArrayEquals(
            results.get(0).tensor(TextEncodeLoop.PROMPT_EMBEDS).toFloatArray(),
            r.tensor(TextEncodeLoop.PROMPT_EMBEDS).toFloatArray());
      }

      Request longer =
          BlockCacheTest.request("longer", 0, Map.of()).toBuilder()
              .nodeOverrides(Map.of(WanCards.TEXT_ENCODE, Map.of("max_sequence_length", "24")))
              .build();
      BlockCacheTest.runLoop(loop, longer, model, BlockCacheTest.context(longer, Map.of()));
      assertEquals(
          4, model.textEmbeddingCache().metrics().misses(), "another length is another key");
    }
  }
}

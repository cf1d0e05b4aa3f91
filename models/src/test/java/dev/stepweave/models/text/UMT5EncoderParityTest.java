package dev.stepweave.models.text;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.models.GoldenBounds;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.CheckpointException;
import dev.stepweave.tensor.io.SafetensorsFile;
import dev.stepweave.tensor.io.TensorSource;
import dev.stepweave.tensor.io.Weights;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class UMT5EncoderParityTest {
  private static final double TOLERANCE = GoldenBounds.maxAbs("umt5");
  private static final Path TEXT_ENCODER = TextGoldens.checkpoint().resolve("text_encoder");
  private static final UMT5Config CONFIG = UMT5Config.read(TEXT_ENCODER.resolve("config.json"));

  private final Backend backend = new CpuBackend();

  @Test
  void lastHiddenStateMatchesTransformers() {
    try (TensorSource weights = checkpoint();
        SafetensorsFile expected = SafetensorsFile.open(TextGoldens.expected("umt5.safetensors"))) {
      UMT5Encoder encoder = UMT5Encoder.load(CONFIG, new Weights(weights, backend, DType.F32));
      // Row 0 is padded: its padded keys must be masked, and its pad positions still computed.
      Tensor out = encoder.encode(expected.load("input_ids"), expected.load("attention_mask"));
      float err =
          TextGoldens.maxAbsDiff(backend.download(out), expected.loadF32("last_hidden_state"));
      assertTrue(err <= TOLERANCE, "max abs error " + err);
    }
  }

  @Test
  void aTiedEmbeddingCopyIsAcceptedAndEitherNameAlone() {
    try (SafetensorsFile expected =
        SafetensorsFile.open(TextGoldens.expected("umt5.safetensors"))) {
      Tensor ids = expected.load("input_ids");
      Tensor mask = expected.load("attention_mask");
      Tensor reference = encodeWith(checkpoint(), ids, mask);
      Tensor withCopy =
          encodeWith(
              new EditedSource(
                  checkpoint(), Map.of("encoder.embed_tokens.weight", "shared.weight"), Set.of()),
              ids,
              mask);
      Tensor copyOnly =
          encodeWith(
              new EditedSource(
                  checkpoint(),
                  Map.of("encoder.embed_tokens.weight", "shared.weight"),
                  Set.of("shared.weight")),
              ids,
              mask);
      assertEquals(0f, TextGoldens.maxAbsDiff(withCopy, reference));
      assertEquals(0f, TextGoldens.maxAbsDiff(copyOnly, reference));
    }
  }

  @Test
  void anUnexpectedTensorFailsNamingIt() {
    String extra = "encoder.block.0.layer.0.SelfAttention.extra.weight";
    try (TensorSource source =
        new EditedSource(checkpoint(), Map.of(extra, "shared.weight"), Set.of())) {
      CheckpointException e =
          assertThrows(
              CheckpointException.class,
              () -> UMT5Encoder.load(CONFIG, new Weights(source, backend, DType.F32)));
      assertTrue(e.getMessage().contains("unexpected tensor '" + extra + "'"), e.getMessage());
    }
  }

  @Test
  void aLayerTheConfigDoesNotHaveFailsAsUnexpected() {
    UMT5Config oneLayer = new UMT5Config(24, 8, 40, 3, 1, 32, 128, 1e-6f, 64, true);
    try (TensorSource source = checkpoint()) {
      CheckpointException e =
          assertThrows(
              CheckpointException.class,
              () -> UMT5Encoder.load(oneLayer, new Weights(source, backend, DType.F32)));
      assertTrue(e.getMessage().contains("unexpected tensor 'encoder.block.1."), e.getMessage());
    }
  }

  private Tensor encodeWith(TensorSource source, Tensor ids, Tensor mask) {
    try (source) {
      UMT5Encoder encoder = UMT5Encoder.load(CONFIG, new Weights(source, backend, DType.F32));
      return backend.download(encoder.encode(ids, mask));
    }
  }

  private static TensorSource checkpoint() {
    return SafetensorsFile.open(TEXT_ENCODER.resolve("model.safetensors"));
  }
}

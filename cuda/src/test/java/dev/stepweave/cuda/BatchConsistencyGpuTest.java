package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.EngineConfig;
import dev.stepweave.core.runtime.RequestHandle;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.RandomWeights;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The consistency rung of the GPU path (docs/cuda.md): requests interleaved step by step, and
 * requests batched into one transformer call, give their serial frames bit for bit — the GEMMs,
 * attention and convolutions run each item's choice of algorithm whatever the batch size ("Batch
 * invariance").
 */
@Tag("gpu")
class BatchConsistencyGpuTest {
  private static final Path TINY =
      Path.of(System.getProperty("stepweave.golden", "testdata/golden"), "wan21-tiny");

  private static List<Request> mix() {
    String[] prompts = {"a red ball bouncing", "a blue cube spinning", "waves on a beach"};
    List<Request> out = new ArrayList<>();
    for (int i = 0; i < prompts.length; i++) {
      DiffusionParams p =
          new DiffusionParams(
              3 + i, 5.0, 100 + i, 32, 32, 9, 8, "blurry", Optional.empty(), Optional.empty());
      out.add(Request.text(TaskType.T2V, prompts[i], p));
    }
    return out;
  }

  private static List<Tensor> run(WanModel model, EngineConfig config, boolean together)
      throws Exception {
    List<Tensor> frames = new ArrayList<>();
    try (Engine engine = new Engine(model, config)) {
      List<RequestHandle> handles = new ArrayList<>();
      for (Request r : mix()) {
        RequestHandle h = engine.submit(r);
        if (!together) {
          frames.add(frames(h));
        }
        handles.add(h);
      }
      if (together) {
        for (RequestHandle h : handles) {
          frames.add(frames(h));
        }
      }
    }
    return frames;
  }

  private static Tensor frames(RequestHandle h) throws Exception {
    return h.result().get(300, TimeUnit.SECONDS).artifact(Artifact.VideoArtifact.class).frames();
  }

  @Test
  void interleavedAndBatchedRequestsGiveTheirSerialFramesBitForBit() throws Exception {
    CudaBackend gpu = Gpu.bf16();
    WanModel model = WanModel.load(TINY, gpu);
    EngineConfig unbatched = EngineConfig.builder().maxBatchSize(1).maxBatchMillis(1).build();
    List<Tensor> serial = run(model, unbatched, false);
    Set<String> serialPaths = paths(gpu);
    List<Tensor> interleaved = run(model, unbatched, true);
    List<Tensor> batched = run(model, EngineConfig.defaults(), true);
    // Every plan, those the serial runs had not met marked: where a batch could differ.
    System.out.println("  GEMM and convolution plans (+: first met batched):");
    paths(gpu).forEach(l -> System.out.println((serialPaths.contains(l) ? "     " : "    +") + l));
    // The tiny DiT's attentions (12 tokens of 2 heads of 16, text of 512) at each batch the runs
    // met: an engine other than the batch-1 item's is a batch that can differ.
    for (int batch : new int[] {1, 2, 4, 6}) {
      for (int keys : new int[] {12, 512}) {
        Tensor q = gpu.upload(RandomWeights.uniform(batch, 1f, batch, 12, 2, 16), DType.BF16);
        Tensor kv = gpu.upload(RandomWeights.uniform(keys, 1f, batch, keys, 2, 16), DType.BF16);
        // A batch's first run settles its plan (checked against its items alone).
        gpu.attention(q, kv, kv, null, 0.25f);
        System.out.printf(
            "  attention batch %d, %d keys: %s%n", batch, keys, gpu.attentionPath(q, kv, kv));
      }
    }
    for (int i = 0; i < serial.size(); i++) {
      float[] expected = serial.get(i).toFloatArray();
      assertArrayEquals(expected, interleaved.get(i).toFloatArray(), "interleaved request " + i);
      System.out.printf(
          "  request %d batched vs serial: relative L2 %.2e%n",
          i, RelativeL2.of(batched.get(i), serial.get(i)));
      assertArrayEquals(expected, batched.get(i).toFloatArray(), "batched request " + i);
    }
  }

  /** Every GEMM and convolution plan the backend holds, one line each. */
  private static Set<String> paths(CudaBackend gpu) {
    Set<String> out = new LinkedHashSet<>();
    out.addAll(gpu.gemmPaths().lines().map(l -> "gemm " + l).toList());
    out.addAll(gpu.conv3dPaths().lines().map(l -> "conv " + l).toList());
    return out;
  }
}

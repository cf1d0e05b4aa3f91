package dev.stepweave.cuda;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.core.parity.TapSink;
import dev.stepweave.models.wan.transformer.WanTransformer;
import dev.stepweave.models.wan.transformer.WanTransformerConfig;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Weights;
import java.util.Arrays;

/**
 * Times one Wan 2.1 DiT forward on the GPU with random weights: {@code DitTiming <size> <dtype> <B>
 * <F> <H> <W> <textLen> <iterations>} where size is {@code small} (2 layers, 1.3B widths) or {@code
 * 1.3b} (the 1.3B configuration) and F/H/W are the latent's frames, height and width.
 */
public final class DitTiming {
  private DitTiming() {}

  static WanTransformerConfig config(String size) {
    ObjectNode json = new ObjectMapper().createObjectNode();
    json.put("attention_head_dim", 128);
    json.put("num_attention_heads", 12);
    json.put("ffn_dim", 8960);
    json.put("freq_dim", 256);
    json.put("num_layers", size.equals("small") ? 2 : 30);
    json.put("text_dim", 4096);
    json.put("in_channels", 16);
    json.put("out_channels", 16);
    json.putArray("patch_size").add(1).add(2).add(2);
    json.put("cross_attn_norm", true);
    json.put("qk_norm", "rms_norm_across_heads");
    json.put("eps", 1e-6);
    json.put("rope_max_seq_len", 1024);
    json.putNull("added_kv_proj_dim");
    json.putNull("image_dim");
    json.putNull("pos_embed_seq_len");
    return WanTransformerConfig.fromJson(json);
  }

  public static void main(String[] args) {
    String size = args[0];
    DType dtype = DType.parse(args[1]);
    int b = Integer.parseInt(args[2]), f = Integer.parseInt(args[3]);
    int h = Integer.parseInt(args[4]), w = Integer.parseInt(args[5]);
    int text = Integer.parseInt(args[6]), iterations = Integer.parseInt(args[7]);
    CudaBackend gpu = Backends.availability().backend();
    if (gpu == null) {
      System.out.println(Backends.availability().reason());
      System.exit(2);
    }
    WanTransformerConfig cfg = config(size);
    long t0 = System.nanoTime();
    WanTransformer dit =
        WanTransformer.load(
            cfg, new Weights(new RandomWeights(WanDitShapes.of(cfg), dtype, 0.02f), gpu, dtype));
    gpu.synchronize();
    long loaded = System.nanoTime();
    Tensor latents = gpu.upload(RandomWeights.uniform(1, 1f, b, 16, f, h, w), DType.F32);
    Tensor timestep = gpu.upload(Tensor.full(500f, b), DType.F32);
    Tensor context = gpu.upload(RandomWeights.uniform(2, 1f, b, text, 4096), DType.F32);
    float[] ms = new float[iterations];
    Tensor[] out = new Tensor[1];
    for (int i = -1; i < iterations; i++) {
      long s = System.nanoTime();
      float device =
          gpu.context().time(() -> out[0] = dit.forward(latents, timestep, context, TapSink.NONE));
      double wall = (System.nanoTime() - s) / 1e6;
      if (i >= 0) {
        ms[i] = device;
      }
      System.out.printf(
          "  %s forward %s: device %.1f ms, wall %.1f ms%n",
          i < 0 ? "warm-up" : "timed", i, device, wall);
    }
    Arrays.sort(ms);
    float[] sample = gpu.download(out[0]).toFloatArray();
    double norm = 0;
    for (float v : sample) {
      norm += v * v;
    }
    System.out.printf(
        "DIT %s %s latent [%d,16,%d,%d,%d] text %d: median %.1f ms over %d (load %.1f s), "
            + "peak live %.2f GB, reserved %.2f GB, out rms %.4f%n",
        size,
        dtype,
        b,
        f,
        h,
        w,
        text,
        ms[iterations / 2],
        iterations,
        (loaded - t0) / 1e9,
        gpu.peakLiveBytes() / 1e9,
        gpu.reservedBytes() / 1e9,
        Math.sqrt(norm / sample.length));
    System.exit(0);
  }
}

// A model folder whose COMPONENT weights are a training checkpoint's over the base's, so a
// checkpoint can be judged: Overlay.java MODEL_DIR CHECKPOINT/weights.safetensors OUT_DIR [vae]
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.*;
import java.nio.file.*;
import java.util.*;

/** args: modelDir checkpointWeights outDir [component] — a model dir whose component weights are the checkpoint's over the base's. */
public class Overlay {
  public static void main(String[] a) throws Exception {
    Path model = Path.of(a[0]), ck = Path.of(a[1]), out = Path.of(a[2]);
    String comp = a.length > 3 ? a[3] : "vae";
    try (var s = Files.walk(model)) {
      for (Path p : s.toList()) {
        Path t = out.resolve(model.relativize(p).toString());
        if (Files.isDirectory(p)) Files.createDirectories(t);
        else if (!p.toString().endsWith(comp + "/diffusion_pytorch_model.safetensors")) Files.copy(p, t, StandardCopyOption.REPLACE_EXISTING);
      }
    }
    Map<String, Tensor> m = new LinkedHashMap<>();
    try (SafetensorsFile base = SafetensorsFile.open(model.resolve(comp + "/diffusion_pytorch_model.safetensors"));
        SafetensorsFile c = SafetensorsFile.open(ck)) {
      for (String k : base.keys()) m.put(k, (c.keys().contains(k) ? c.load(k) : base.load(k)).toHost(dev.stepweave.tensor.DType.F32));
      Safetensors.write(out.resolve(comp + "/diffusion_pytorch_model.safetensors"), m, Map.of("format", "pt"));
    }
  }
}

package example;

import dev.stepweave.core.request.Artifact.VideoArtifact;
import dev.stepweave.media.Mp4Writer;
import dev.stepweave.models.wan.WanGenerator;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.nio.file.Path;

public class QuickStart {
  public static void main(String[] args) throws Exception {
    // WanGenerator.open(Path.of("Wan2.1-T2V-1.3B-Diffusers"), new CpuBackend()) for a real one.
    try (WanGenerator wan = WanGenerator.embedded(new CpuBackend())) {
      VideoArtifact video = wan.video("a red ball moving left on a black background", 42);
      Mp4Writer.write(Path.of("out.mp4"), video.frames(), video.fps());
      System.out.println(video.frames().dim(0) + " frames of " + wan.card().modelId());
    }
  }
}

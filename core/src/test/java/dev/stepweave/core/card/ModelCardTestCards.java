package dev.stepweave.core.card;

import dev.stepweave.tensor.Precision;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** Card fixtures shared by tests. */
public final class ModelCardTestCards {
  private ModelCardTestCards() {}

  /** A two-component card with one loop per task; {@code recipe} varies per test. */
  public static ModelCard card(RecipeSpec recipe) {
    var all = EnumSet.allOf(TaskType.class);
    return new ModelCard(
        "tiny-4step",
        "wan",
        Map.of(
            "dit",
                new ComponentSpec(
                    "dit",
                    ComponentKind.DIT,
                    "transformer",
                    "WanTransformer3DModel",
                    Precision.F32),
            "vae",
                new ComponentSpec(
                    "vae", ComponentKind.VAE, "vae", "AutoencoderKLWan", Precision.F32)),
        Map.of(
            "denoise", new LoopSpec("denoise", WorkKind.DIFFUSION_STEP, List.of("dit")),
            "decode", new LoopSpec("decode", WorkKind.VAE_TILE, List.of("vae"))),
        Map.of(TaskType.T2V, List.of("denoise", "decode")),
        recipe,
        new ParitySpec(ConsistencyRung.C1, List.of("block_*"), Map.of("dit", 1e-4)),
        Map.of(),
        ParallelismContract.single(),
        new PrecisionContract(Set.of(Precision.F32, Precision.BF16), Precision.F32),
        new CheckpointManifest(
            Map.of(
                "dit", new CheckpointManifest.Requirement(all, Set.of()),
                "vae", new CheckpointManifest.Requirement(all, Set.of()))),
        new GenerationDefaults(256, 256, 17, 8, 4, 1.0));
  }

  public static RecipeSpec distilled() {
    return new RecipeSpec(
        "dmd2",
        List.of("wan-base"),
        "test",
        "denoise",
        "euler",
        4,
        Precision.BF16,
        ConsistencyRung.C1);
  }
}

package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import java.util.List;

/** Time-axis helpers for {@code [B, C, T, H, W]} activations. */
final class Frames {
  /** How many trailing input frames a cached convolution keeps (the reference's CACHE_T). */
  static final int CACHED = 2;

  private static final int TIME = 2;

  private Frames() {}

  static int count(Tensor x) {
    return x.dim(TIME);
  }

  /** A view of the last {@code n} frames (fewer when {@code x} has fewer). */
  static Tensor last(Tensor x, int n) {
    int t = count(x);
    return x.slice(TIME, Math.max(0, t - n), t);
  }

  /** Zero frames shaped like {@code like}'s, {@code n} of them. */
  static Tensor zeros(Backend backend, Tensor like, int n) {
    int[] shape = like.shape();
    shape[TIME] = n;
    return backend.zeros(like.dtype(), shape);
  }

  static Tensor concat(Backend backend, List<Tensor> parts) {
    return backend.concat(parts, TIME);
  }

  /**
   * The frames a cached convolution keeps after seeing {@code x}: its last two, topped up with the
   * last remembered frame when the chunk had only one. Copied, so the whole chunk is not retained.
   */
  static Tensor tail(Backend backend, Tensor x, Tensor remembered) {
    Tensor recent = last(x, CACHED);
    if (count(recent) < CACHED && remembered != null) {
      return kept(
          backend, concat(backend, List.of(recalled(backend, last(remembered, 1), x), recent)));
    }
    return kept(backend, recent);
  }

  /**
   * {@code frames} as a causal cache keeps them: a contiguous copy, in BF16 on a backend whose
   * activations are BF16. The caches are a decode's largest holding (3.5 GB of F32 at 480p×81) and
   * feed only the first two time taps of the convolutions that read them back, which the
   * performance mode already runs on the tensor cores (exact mode and the CPU keep F32).
   */
  static Tensor kept(Backend backend, Tensor frames) {
    return backend.activationDType() == DType.BF16 && frames.dtype() == DType.F32
        ? backend.upload(frames, DType.BF16)
        : backend.contiguous(frames);
  }

  /** Cached frames (null when none) in the dtype of {@code like}, which they precede in time. */
  static Tensor recalled(Backend backend, Tensor kept, Tensor like) {
    return kept == null || kept.dtype() == like.dtype() ? kept : backend.upload(kept, like.dtype());
  }
}

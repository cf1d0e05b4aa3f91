package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;

/**
 * The backward of scaled dot-product attention: the forward backend's own {@link
 * Backend#attentionBackward} (on the CPU a vectorised kernel beside the forward's, which recomputes
 * each query row's probabilities and never forms the Lq×Lk scores), its gradients addressed to q,
 * k, v and — when the bias itself takes a gradient — the bias broadcast to {@code [B, H, Lq, Lk]}.
 */
final class AttentionGrad {
  private AttentionGrad() {}

  static BackwardRule of(Backend device, Backend.AttentionForward forward) {
    Tensor q = forward.q(), k = forward.k(), v = forward.v(), bias = forward.bias();
    return (gradOut, wanted) -> {
      boolean wantBias = bias != null && wanted.test(bias);
      Backend.AttentionGradients g = device.attentionBackward(forward, gradOut, wantBias);
      List<Contribution> list = new ArrayList<>(4);
      if (wanted.test(q)) {
        list.add(new Contribution(q, g.q()));
      }
      if (wanted.test(k)) {
        list.add(new Contribution(k, g.k()));
      }
      if (wanted.test(v)) {
        list.add(new Contribution(v, g.v()));
      }
      if (wantBias) {
        list.add(new Contribution(bias.expand(q.dim(0), q.dim(2), q.dim(1), k.dim(1)), g.bias()));
      }
      return list;
    };
  }
}

package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;

/**
 * Backward rules of the operations that move or gather elements. Each hands every input the part of
 * the output gradient that input's elements went to — a view of it where the elements moved as a
 * block (concat, pad, sum), so nothing is computed; nearest upsampling and the embedding lookup sum
 * on the host.
 */
final class MovementGrads {
  private MovementGrads() {}

  /** An operation whose output is its input (a copy, a conversion, a download). */
  static BackwardRule identity(Tensor x) {
    return (g, wanted) -> wanted.test(x) ? List.of(new Contribution(x, g)) : List.of();
  }

  static BackwardRule concat(List<Tensor> parts, int dim, Tensor out) {
    return (grad, wanted) -> {
      int axis = out.axis(dim);
      List<Contribution> list = new ArrayList<>(parts.size());
      int at = 0;
      for (Tensor p : parts) {
        int len = p.dim(axis);
        if (wanted.test(p)) {
          list.add(new Contribution(p, grad.slice(axis, at, at + len)));
        }
        at += len;
      }
      return list;
    };
  }

  /**
   * Constant padding (negative pads crop): the elements of x that survive are a slice of x, and
   * they land in a slice of the output; only they get gradient.
   */
  static BackwardRule pad(Tensor x, int[] pads) {
    return (g, wanted) -> {
      if (!wanted.test(x)) {
        return List.of();
      }
      Tensor kept = x;
      Tensor landed = g;
      for (int pair = 0; pair < pads.length / 2; pair++) {
        int d = x.rank() - 1 - pair;
        int before = pads[2 * pair];
        int after = pads[2 * pair + 1];
        int from = Math.max(0, -before);
        int to = x.dim(d) - Math.max(0, -after);
        kept = kept.slice(d, from, to);
        int start = Math.max(0, before);
        landed = landed.slice(d, start, start + (to - from));
      }
      return List.of(new Contribution(kept, landed));
    };
  }

  /** Each input element was copied to a {@code scaleH × scaleW} block: its gradient sums it. */
  static BackwardRule upsampleNearest2d(Backend device, Tensor x, int scaleH, int scaleW) {
    return BackwardRule.onHost(
        device,
        (g, wanted) -> {
          if (!wanted.test(x)) {
            return List.of();
          }
          int h = x.dim(-2);
          int w = x.dim(-1);
          int planes = (int) (x.numel() / ((long) h * w));
          float[] dx = new float[(int) x.numel()];
          int outW = w * scaleW;
          for (int p = 0; p < planes; p++) {
            for (int i = 0; i < h * scaleH; i++) {
              for (int j = 0; j < outW; j++) {
                dx[(p * h + i / scaleH) * w + j / scaleW] += g[(p * h * scaleH + i) * outW + j];
              }
            }
          }
          return List.of(new Contribution(x, dx));
        });
  }

  /** Rows picked from a table: each picked row's gradient adds to that row of the table. */
  static BackwardRule embedding(Backend device, Tensor table, Tensor ids) {
    return BackwardRule.onHost(
        device,
        (g, wanted) -> {
          if (wanted.test(ids)) {
            throw new UnsupportedOperationException("embedding ids take no gradient");
          }
          if (!wanted.test(table)) {
            return List.of();
          }
          int width = table.dim(1);
          float[] dt = new float[(int) table.numel()];
          Tensor hostIds = ids.device().kind() == Device.Kind.CPU ? ids : device.download(ids);
          long n = ids.numel();
          for (int i = 0; i < n; i++) {
            int row = (int) hostIds.getLong(flatIndex(hostIds, i));
            for (int c = 0; c < width; c++) {
              dt[row * width + c] += g[i * width + c];
            }
          }
          return List.of(new Contribution(table, dt));
        });
  }

  private static int[] flatIndex(Tensor t, long flat) {
    int[] idx = new int[t.rank()];
    for (int d = t.rank() - 1; d >= 0; d--) {
      idx[d] = (int) (flat % t.dim(d));
      flat /= t.dim(d);
    }
    return idx;
  }

  /** The sum over the last dimension: every summed element gets its row's gradient. */
  static BackwardRule sumLastDim(Tensor x) {
    return (g, wanted) ->
        wanted.test(x) ? List.of(new Contribution(x, g.expand(x.shape()))) : List.of();
  }
}

package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;

/**
 * The backward of the channels-first 3-D convolution with zero padding and strides: every output
 * element {@code y[b,o,t,h,w]} read {@code x[b,c,t·st−pt+i, h·sh−ph+j, w·sw−pw+l]·w[o,c,i,j,l]}, so
 * its gradient flows back along exactly those pairs. As the CPU's forward, it unfolds the input
 * (im2col) and runs the sums as GEMMs on the host backend; the fold back onto dx runs in parallel
 * over input channels, so no two threads add to one element. On a device it runs on the host too
 * ({@link BackwardRule#onHost}: cuDNN's backward-data and backward-filter are not bound yet) —
 * except a patch embedding (strides equal to the kernel, no padding), whose backward is two GEMMs
 * and a row sum in the backend's own operations.
 */
final class ConvolutionGrad {
  private ConvolutionGrad() {}

  static BackwardRule of(
      Backend device,
      Backend host,
      Tensor x,
      Tensor w,
      Tensor bias,
      int[] stride,
      int[] padding,
      Tensor y) {
    if (isPatchEmbedding(x, w, stride, padding)) {
      return patches(device, x, w, bias);
    }
    return BackwardRule.onHost(
        device,
        (g, wanted) -> {
          Geometry geo = new Geometry(x.shape(), w.shape(), y.shape(), stride, padding);
          List<Contribution> out = new ArrayList<>(3);
          boolean wantX = wanted.test(x);
          boolean wantW = wanted.test(w);
          if (wantX || wantW) {
            int k = geo.inC * geo.kt * geo.kh * geo.kw;
            float[] dx = wantX ? new float[(int) x.numel()] : null;
            float[] dw = wantW ? new float[geo.outC * k] : null;
            float[] xv = wantW ? Host.values(device, x) : null;
            Tensor wT =
                wantX
                    ? Tensor.of(transpose(Host.values(device, w), geo.outC, k), k, geo.outC)
                    : null;
            // One copy of the output gradient, viewed per batch entry, and one unfolded input that
            // every entry overwrites: the serial passes over memory are what the backward costs.
            Tensor gAll = Tensor.of(g, geo.batch, geo.outC, geo.ot * geo.oh * geo.ow);
            Tensor cols = wantW ? Tensor.zeros(DType.F32, k, geo.ot * geo.oh * geo.ow) : null;
            for (int b = 0; b < geo.batch; b++) {
              batchEntry(host, geo, b, gAll.select(0, b), xv, cols, wT, dx, dw);
            }
            if (wantX) {
              out.add(new Contribution(x, dx));
            }
            if (wantW) {
              out.add(new Contribution(w, dw));
            }
          }
          if (bias != null && wanted.test(bias)) {
            double[] db = new double[geo.outC];
            int vol = geo.ot * geo.oh * geo.ow;
            for (int b = 0; b < geo.batch; b++) {
              for (int o = 0; o < geo.outC; o++) {
                int base = (b * geo.outC + o) * vol;
                for (int i = 0; i < vol; i++) {
                  db[o] += g[base + i];
                }
              }
            }
            out.add(new Contribution(bias, Host.floats(db)));
          }
          return out;
        });
  }

  /**
   * Whether the convolution only cuts the input into disjoint patches and projects each: strides
   * equal to the kernel, no padding, every input element in one patch (the DiT's patch embedding).
   */
  private static boolean isPatchEmbedding(Tensor x, Tensor w, int[] stride, int[] padding) {
    for (int d = 0; d < 3; d++) {
      int k = w.dim(2 + d);
      if (stride[d] != k || padding[d] != 0 || x.dim(2 + d) % k != 0) {
        return false;
      }
    }
    return true;
  }

  /**
   * The patch embedding's backward as the backend's own GEMMs, so on a device it never leaves it:
   * with {@code P [B, N, K]} the input cut into its N patches of K = C·kt·kh·kw values (an 8-D
   * permute of x) and the output gradient {@code g [B, O, N]}, {@code dW = Σ_b g_b·P_b}, {@code dP
   * = gᵀ·W} (permuted back onto x) and {@code db = Σ g}.
   */
  private static BackwardRule patches(Backend device, Tensor x, Tensor w, Tensor bias) {
    int b = x.dim(0), c = x.dim(1);
    int kt = w.dim(2), kh = w.dim(3), kw = w.dim(4);
    int ot = x.dim(2) / kt, oh = x.dim(3) / kh, ow = x.dim(4) / kw;
    int o = w.dim(0), n = ot * oh * ow, k = c * kt * kh * kw;
    return (g, wanted) -> {
      List<Contribution> out = new ArrayList<>(3);
      Tensor gb = device.contiguous(g).reshape(b, o, n);
      boolean wantB = bias != null && wanted.test(bias);
      // [O, B·N]: every batch entry's positions side by side, for the sums over them (the weight's
      // and the bias's gradients only: a LoRA run wants neither).
      Tensor gAll =
          wanted.test(w) || wantB ? device.contiguous(gb.permute(1, 0, 2)).reshape(o, b * n) : null;
      if (wanted.test(w)) {
        Tensor cut =
            device
                .contiguous(x)
                .reshape(b, c, ot, kt, oh, kh, ow, kw)
                .permute(0, 2, 4, 6, 1, 3, 5, 7);
        Tensor p = device.contiguous(cut).reshape(b * n, k);
        out.add(new Contribution(w, device.matmul(gAll, p).reshape(w.shape())));
      }
      if (wanted.test(x)) {
        Tensor dp = device.matmul(gb.transpose(1, 2), w.reshape(o, k)); // [B, N, K]
        Tensor back = dp.reshape(b, ot, oh, ow, c, kt, kh, kw).permute(0, 4, 1, 5, 2, 6, 3, 7);
        out.add(new Contribution(x, device.contiguous(back).reshape(x.shape())));
      }
      if (wantB) {
        out.add(new Contribution(bias, device.sumLastDim(gAll).reshape(o)));
      }
      return out;
    };
  }

  /**
   * Both gradients of one batch entry through the unfolded input {@code cols[k, p]} (k a (channel,
   * tap) pair, p an output position; zero where the tap reads padding), on the host backend's GEMM:
   * {@code dw += g_b·colsᵀ}, {@code dcols = wᵀ·g_b}, then {@code dcols} folded back onto dx.
   *
   * @param gb the entry's output gradient {@code [outC, p]}
   * @param cols {@code [k, p]}, overwritten with this entry's unfolded input
   */
  private static void batchEntry(
      Backend host,
      Geometry geo,
      int b,
      Tensor gb,
      float[] xv,
      Tensor cols,
      Tensor wT,
      float[] dx,
      float[] dw) {
    int k = geo.inC * geo.kt * geo.kh * geo.kw;
    if (dw != null) {
      MemorySegment target = cols.segment();
      IntStream.range(0, k).parallel().forEach(row -> geo.unfoldRow(xv, b, row, target));
      float[] part = host.linear(gb, cols, null).toFloatArray();
      for (int i = 0; i < part.length; i++) {
        dw[i] += part[i];
      }
    }
    if (dx != null) {
      MemorySegment dcols = host.matmul(wT, gb).segment();
      IntStream.range(0, geo.inC).parallel().forEach(c -> geo.foldChannel(dcols, b, c, dx));
    }
  }

  /** {@code m} stored {@code [a, b]}, returned as {@code [b, a]}. */
  private static float[] transpose(float[] m, int a, int b) {
    float[] t = new float[m.length];
    for (int i = 0; i < a; i++) {
      for (int j = 0; j < b; j++) {
        t[j * a + i] = m[i * b + j];
      }
    }
    return t;
  }

  /** The sizes, strides and paddings of one convolution, and its row-major index maps. */
  private static final class Geometry {
    final int batch, inC, it, ih, iw;
    final int outC, kt, kh, kw;
    final int ot, oh, ow;
    final int st, sh, sw, pt, ph, pw;

    Geometry(int[] xs, int[] ws, int[] ys, int[] stride, int[] padding) {
      batch = xs[0];
      inC = xs[1];
      it = xs[2];
      ih = xs[3];
      iw = xs[4];
      outC = ws[0];
      kt = ws[2];
      kh = ws[3];
      kw = ws[4];
      ot = ys[2];
      oh = ys[3];
      ow = ys[4];
      st = stride[0];
      sh = stride[1];
      sw = stride[2];
      pt = padding[0];
      ph = padding[1];
      pw = padding[2];
    }

    /** The first output column whose tap {@code l} reads inside the input row. */
    int firstColumn(int l) {
      return Math.max(0, Math.ceilDiv(pw - l, sw));
    }

    /** The last output column whose tap {@code l} reads inside the input row. */
    int lastColumn(int l) {
      return Math.min(ow - 1, Math.floorDiv(iw - 1 + pw - l, sw));
    }

    /**
     * Writes row {@code row} = (c, i, j, l) of batch entry b's unfolded input into {@code cols}
     * (F32 {@code [k, positions]}): for each output position, the input value that tap reads there
     * (0 in the padding).
     */
    void unfoldRow(float[] xv, int b, int row, MemorySegment cols) {
      int l = row % kw;
      int j = row / kw % kh;
      int i = row / (kw * kh) % kt;
      int c = row / (kw * kh * kt);
      int xLo = firstColumn(l);
      int xHi = lastColumn(l);
      int positions = ot * oh * ow;
      float[] line = new float[positions];
      for (int t = 0; t < ot; t++) {
        int ti = t * st - pt + i;
        if (ti < 0 || ti >= it) {
          continue;
        }
        for (int h = 0; h < oh; h++) {
          int hi = h * sh - ph + j;
          if (hi < 0 || hi >= ih) {
            continue;
          }
          int dst = (t * oh + h) * ow;
          int src = inputIndex(b, c, ti, hi, 0) - pw + l;
          for (int x = xLo; x <= xHi; x++) {
            line[dst + x] = xv[src + x * sw];
          }
        }
      }
      MemorySegment.copy(
          line, 0, cols, ValueLayout.JAVA_FLOAT, (long) row * positions * Float.BYTES, positions);
    }

    /**
     * Adds the rows of channel c of the unfolded gradient {@code dcols} (F32 {@code [k,
     * positions]}) back onto batch entry b of dx.
     */
    void foldChannel(MemorySegment dcols, int b, int c, float[] dx) {
      int positions = ot * oh * ow;
      float[] line = new float[positions];
      for (int i = 0; i < kt; i++) {
        for (int j = 0; j < kh; j++) {
          for (int l = 0; l < kw; l++) {
            int row = ((c * kt + i) * kh + j) * kw + l;
            MemorySegment.copy(
                dcols,
                ValueLayout.JAVA_FLOAT,
                (long) row * positions * Float.BYTES,
                line,
                0,
                positions);
            int xLo = firstColumn(l);
            int xHi = lastColumn(l);
            for (int t = 0; t < ot; t++) {
              int ti = t * st - pt + i;
              if (ti < 0 || ti >= it) {
                continue;
              }
              for (int h = 0; h < oh; h++) {
                int hi = h * sh - ph + j;
                if (hi < 0 || hi >= ih) {
                  continue;
                }
                int src = (t * oh + h) * ow;
                int dst = inputIndex(b, c, ti, hi, 0) - pw + l;
                for (int x = xLo; x <= xHi; x++) {
                  dx[dst + x * sw] += line[src + x];
                }
              }
            }
          }
        }
      }
    }

    int outIndex(int b, int o, int t, int h, int w) {
      return (((b * outC + o) * ot + t) * oh + h) * ow + w;
    }

    int inputIndex(int b, int c, int t, int h, int w) {
      return (((b * inC + c) * it + t) * ih + h) * iw + w;
    }

    int weightIndex(int o, int c, int t, int h, int w) {
      return (((o * inC + c) * kt + t) * kh + h) * kw + w;
    }
  }
}

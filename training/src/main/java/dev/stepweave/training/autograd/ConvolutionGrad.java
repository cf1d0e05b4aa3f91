package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;

/**
 * The backward of the channels-first 3-D convolution with zero padding and strides: every output
 * element {@code y[b,o,t,h,w]} read {@code x[b,c,t·st−pt+i, h·sh−ph+j, w·sw−pw+l]·w[o,c,i,j,l]}, so
 * its gradient flows back along exactly those pairs. The weight gradient runs in parallel over
 * output channels and the input gradient over (batch, input channel), so no two threads add to one
 * element.
 */
final class ConvolutionGrad {
  private ConvolutionGrad() {}

  static BackwardRule of(Tensor x, Tensor w, Tensor bias, int[] stride, int[] padding, Tensor y) {
    return (g, wanted) -> {
      Geometry geo = new Geometry(x.shape(), w.shape(), y.shape(), stride, padding);
      List<Contribution> out = new ArrayList<>(3);
      if (wanted.test(x)) {
        out.add(new Contribution(x, inputGrad(geo, g, w.toFloatArray())));
      }
      if (wanted.test(w)) {
        out.add(new Contribution(w, weightGrad(geo, g, x.toFloatArray())));
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
    };
  }

  private static float[] inputGrad(Geometry geo, float[] g, float[] wv) {
    float[] dx = new float[geo.batch * geo.inC * geo.it * geo.ih * geo.iw];
    IntStream.range(0, geo.batch * geo.inC)
        .parallel()
        .forEach(
            bc -> {
              int b = bc / geo.inC;
              int c = bc % geo.inC;
              double[] acc = new double[geo.it * geo.ih * geo.iw];
              for (int o = 0; o < geo.outC; o++) {
                for (int t = 0; t < geo.ot; t++) {
                  for (int h = 0; h < geo.oh; h++) {
                    for (int x = 0; x < geo.ow; x++) {
                      double go = g[geo.outIndex(b, o, t, h, x)];
                      if (go == 0) {
                        continue;
                      }
                      for (int i = 0; i < geo.kt; i++) {
                        int ti = t * geo.st - geo.pt + i;
                        if (ti < 0 || ti >= geo.it) {
                          continue;
                        }
                        for (int j = 0; j < geo.kh; j++) {
                          int hi = h * geo.sh - geo.ph + j;
                          if (hi < 0 || hi >= geo.ih) {
                            continue;
                          }
                          for (int l = 0; l < geo.kw; l++) {
                            int wi = x * geo.sw - geo.pw + l;
                            if (wi < 0 || wi >= geo.iw) {
                              continue;
                            }
                            acc[(ti * geo.ih + hi) * geo.iw + wi] +=
                                go * wv[geo.weightIndex(o, c, i, j, l)];
                          }
                        }
                      }
                    }
                  }
                }
              }
              int base = bc * acc.length;
              for (int i = 0; i < acc.length; i++) {
                dx[base + i] = (float) acc[i];
              }
            });
    return dx;
  }

  private static float[] weightGrad(Geometry geo, float[] g, float[] xv) {
    int perOut = geo.inC * geo.kt * geo.kh * geo.kw;
    float[] dw = new float[geo.outC * perOut];
    IntStream.range(0, geo.outC)
        .parallel()
        .forEach(
            o -> {
              double[] acc = new double[perOut];
              for (int b = 0; b < geo.batch; b++) {
                for (int t = 0; t < geo.ot; t++) {
                  for (int h = 0; h < geo.oh; h++) {
                    for (int x = 0; x < geo.ow; x++) {
                      double go = g[geo.outIndex(b, o, t, h, x)];
                      if (go == 0) {
                        continue;
                      }
                      for (int c = 0; c < geo.inC; c++) {
                        for (int i = 0; i < geo.kt; i++) {
                          int ti = t * geo.st - geo.pt + i;
                          if (ti < 0 || ti >= geo.it) {
                            continue;
                          }
                          for (int j = 0; j < geo.kh; j++) {
                            int hi = h * geo.sh - geo.ph + j;
                            if (hi < 0 || hi >= geo.ih) {
                              continue;
                            }
                            for (int l = 0; l < geo.kw; l++) {
                              int wi = x * geo.sw - geo.pw + l;
                              if (wi < 0 || wi >= geo.iw) {
                                continue;
                              }
                              acc[((c * geo.kt + i) * geo.kh + j) * geo.kw + l] +=
                                  go * xv[geo.inputIndex(b, c, ti, hi, wi)];
                            }
                          }
                        }
                      }
                    }
                  }
                }
              }
              for (int i = 0; i < perOut; i++) {
                dw[o * perOut + i] = (float) acc[i];
              }
            });
    return dw;
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

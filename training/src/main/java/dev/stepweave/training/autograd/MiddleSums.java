package dev.stepweave.training.autograd;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Tensor;

/**
 * Sums over the middle dimension of a tensor viewed as {@code [outer, rows, inner]}: a bias's
 * gradient (the rows of a linear's output gradient), a broadcast operand's (the tokens of a
 * modulation's). A device computes it as a product with a row of ones — one pass over the tensor in
 * its F32 GEMM — because its row sum needs the summed dimension last, so a transposed copy first:
 * 8.6 ms a call for a [32 760, 8 960] gradient on an H100 (run 31). The host keeps the copy and the
 * row sum, the order every CPU run, the shipped weights' included, has summed in.
 */
final class MiddleSums {
  private MiddleSums() {}

  /** {@code g} (contiguous or not) summed over its middle dimension: {@code [outer, inner]}. */
  static Tensor of(Backend b, Tensor g, int outer, int rows, int inner) {
    Tensor t = (g.isContiguous() ? g : b.contiguous(g)).reshape(outer, rows, inner);
    if (g.device().kind() == Device.Kind.CPU) {
      return b.sumLastDim(b.contiguous(t.permute(0, 2, 1))).reshape(outer, inner);
    }
    Tensor ones = b.affine(b.zeros(DType.F32, 1, 1, rows), 0f, 1f);
    return b.matmul(ones, t).reshape(outer, inner);
  }
}

package dev.stepweave.cuda.ops;

import dev.stepweave.cuda.memory.DeviceTensors;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Precision;
import dev.stepweave.tensor.Tensor;

/**
 * How the op families take their operands: which activations stay BF16 in the BF16 mode, the dense
 * kernel inputs made of them, and when kernels may move rows in 16-byte packs.
 */
final class Operands {
  private final DeviceTensors tensors;
  private final Precision precision;

  Operands(DeviceTensors tensors, Precision precision) {
    this.tensors = tensors;
    this.precision = precision;
  }

  DeviceTensors tensors() {
    return tensors;
  }

  /** Whether the backend computes in the BF16 performance mode. */
  boolean bf16Mode() {
    return precision == Precision.BF16;
  }

  /** Device address of view {@code t}; 0 (a null pointer) for no tensor. */
  static long addr(Tensor t) {
    return t == null ? 0L : DeviceTensors.address(t);
  }

  /** Rows of an {@code [..., n]} tensor (0 when n is 0). */
  static long rows(Tensor x) {
    int n = x.rank() == 0 ? 1 : x.dim(-1);
    return n == 0 ? 0 : x.numel() / n;
  }

  /** Elements in a kernel's 16-byte pack of {@code t}'s dtype (common.cuh's PACK). */
  static int pack(Tensor t) {
    return 16 / t.dtype().byteSize();
  }

  /**
   * Whether kernels may move rows of length {@code n} of these dense tensors in 16-byte packs:
   * {@code n} a multiple of the pack and every tensor 16-byte aligned (then so is every row).
   */
  static boolean packable(long n, Tensor... tensors) {
    for (Tensor t : tensors) {
      if (n % pack(t) != 0 || addr(t) % 16 != 0) {
        return false;
      }
    }
    return true;
  }

  /** Whether {@code t} is an activation kept in BF16 (a BF16 tensor in the BF16 mode). */
  boolean keepsBf16(Tensor t) {
    return bf16Mode() && t.dtype() == DType.BF16;
  }

  /** {@code t} as a contiguous kernel input: BF16 when it is kept so, else F32. */
  Tensor activation(Tensor t) {
    return keepsBf16(t) ? bf16(t) : tensors.f32(t);
  }

  /** {@code t} as contiguous BF16 on this device (itself when it already is). */
  Tensor bf16(Tensor t) {
    Tensor here = tensors.onDevice(t);
    return here.dtype() == DType.BF16 && here.isContiguous()
        ? here
        : tensors.convert(here, DType.BF16);
  }

  /** {@code vectors} broadcast over the rows of {@code shape}; see {@link RowVectors}. */
  RowVectors rowVectors(int[] shape, Tensor... vectors) {
    return RowVectors.of(tensors, shape, vectors);
  }
}

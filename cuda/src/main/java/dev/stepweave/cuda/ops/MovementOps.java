package dev.stepweave.cuda.ops;

import static dev.stepweave.cuda.ops.Operands.addr;
import static dev.stepweave.cuda.ops.Operands.rows;

import dev.stepweave.cuda.kernels.Kernels;
import dev.stepweave.cuda.kernels.Launch;
import dev.stepweave.cuda.memory.DeviceTensors;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.OpShapes;
import dev.stepweave.tensor.Tensor;
import java.util.Arrays;
import java.util.List;

/** Data movement: concatenation, constant padding, nearest upsampling and embedding lookups. */
public final class MovementOps {
  private final Operands operands;
  private final DeviceTensors tensors;
  private final Kernels kernels;

  MovementOps(Operands operands) {
    this.operands = operands;
    this.tensors = operands.tensors();
    this.kernels = tensors.kernels();
  }

  public Tensor concat(List<Tensor> parts, int dim) {
    int[] shape = OpShapes.concat(parts, dim);
    int a = parts.getFirst().axis(dim);
    Tensor out =
        tensors.empty(parts.stream().allMatch(operands::keepsBf16) ? DType.BF16 : DType.F32, shape);
    int at = 0;
    for (Tensor p : parts) {
      int len = p.dim(a);
      tensors.copy(floatOnDevice(p), out.slice(a, at, at + len));
      at += len;
    }
    return out;
  }

  /**
   * The dtype data moved out of {@code x} keeps: BF16 activations stay BF16 (a copy rounds
   * nothing), everything else becomes F32.
   */
  private DType movedType(Tensor x) {
    return operands.keepsBf16(x) ? DType.BF16 : DType.F32;
  }

  /** A floating device view (any strides, F32 or BF16) that the copy kernel can read. */
  private Tensor floatOnDevice(Tensor t) {
    Tensor here = tensors.onDevice(t);
    return here.dtype().isFloating()
        ? here
        : tensors.convert(tensors.upload(tensors.download(here), DType.F32), DType.F32);
  }

  public Tensor pad(Tensor x, int[] pads, float value) {
    OpShapes.Padding padding = OpShapes.pad(x, pads);
    int rank = x.rank();
    int[] shape = padding.shape();
    int[] before = padding.before();
    Tensor out = tensors.empty(DType.F32, shape);
    if (out.numel() == 0) {
      return out;
    }
    tensors.fill(out, Float.floatToRawIntBits(value));
    Tensor src = floatOnDevice(x);
    Tensor dst = out;
    for (int d = 0; d < rank; d++) {
      // A negative pad crops: the overlap of input and output along d.
      int dstStart = Math.max(before[d], 0);
      int srcStart = Math.max(-before[d], 0);
      int len = Math.min(x.dim(d) - srcStart, shape[d] - dstStart);
      if (len <= 0) {
        return out;
      }
      src = src.slice(d, srcStart, srcStart + len);
      dst = dst.slice(d, dstStart, dstStart + len);
    }
    tensors.copy(src, dst);
    return out;
  }

  public Tensor upsampleNearest2d(Tensor x, int scaleH, int scaleW) {
    int[] shape = OpShapes.upsampleNearest2d(x, scaleH, scaleW);
    int rank = x.rank();
    int h = x.dim(-2), w = x.dim(-1);
    Tensor out = tensors.empty(movedType(x), shape);
    if (out.numel() == 0) {
      return out;
    }
    // out[..., y, s, x, r] = in[..., y, x]: a stride-0 view of the input copied densely.
    int[] split = Arrays.copyOf(x.shape(), rank + 2);
    split[rank - 2] = h;
    split[rank - 1] = scaleH;
    split[rank] = w;
    split[rank + 1] = scaleW;
    Tensor src = floatOnDevice(x).unsqueeze(rank).unsqueeze(rank - 1).expand(split);
    tensors.copy(src, out.reshape(split));
    return out;
  }

  public Tensor embedding(Tensor table, Tensor ids) {
    int[] shape = OpShapes.embedding(table, ids);
    int vocab = table.dim(0), d = table.dim(1);
    Tensor idsHere = tensors.onDevice(ids);
    Tensor id64 =
        idsHere.dtype() == DType.I64
            ? tensors.contiguous(idsHere)
            : tensors.convert(idsHere, DType.I64);
    for (long id : tensors.downloadRaw(id64).toLongArray()) {
      if (id < 0 || id >= vocab) {
        throw new IllegalArgumentException(
            "embedding id " + id + " out of range for a table of " + vocab + " rows");
      }
    }
    Tensor tf = tensors.f32(table);
    Tensor out = tensors.empty(DType.F32, shape);
    long rows = id64.numel();
    if (out.numel() > 0) {
      try (Launch l = kernels.launch("misc.cu", "embedding_f32")) {
        l.ptr(addr(tf)).ptr(addr(id64)).ptr(addr(out)).i64(rows).i32(d);
        kernels.elementwise(l, rows * d);
      }
    }
    return out;
  }
}

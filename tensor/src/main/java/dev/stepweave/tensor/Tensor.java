package dev.stepweave.tensor;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * An n-dimensional strided view over a {@link Storage}. Views (reshape of contiguous data, permute,
 * slice, expand, unsqueeze) share storage and cost nothing; computation lives in a {@link Backend}.
 * Strides and offsets are in elements.
 *
 * <p>The element accessors ({@link #getFloat}, {@link #toFloatArray}, …) work on CPU tensors only;
 * they are for tests, loading and small host-side math, not for hot loops.
 */
public final class Tensor {
  private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
  private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED;

  private final Storage storage;
  private final DType dtype;
  private final int[] shape;
  private final long[] strides;
  private final long offset;

  public Tensor(Storage storage, DType dtype, int[] shape, long[] strides, long offset) {
    if (shape.length != strides.length) {
      throw new IllegalArgumentException(
          "shape "
              + Arrays.toString(shape)
              + " and strides "
              + Arrays.toString(strides)
              + " differ in rank");
    }
    for (int d : shape) {
      if (d < 0) {
        throw new IllegalArgumentException("negative dimension in shape " + Arrays.toString(shape));
      }
    }
    this.storage = storage;
    this.dtype = dtype;
    this.shape = shape.clone();
    this.strides = strides.clone();
    this.offset = offset;
  }

  /** A contiguous tensor over {@code storage} starting at element 0. */
  public static Tensor contiguousOver(Storage storage, DType dtype, int... shape) {
    long need = numel(shape) * dtype.byteSize();
    if (need > storage.byteSize()) {
      throw new IllegalArgumentException(
          "storage of "
              + storage.byteSize()
              + " bytes is too small for "
              + dtype
              + Arrays.toString(shape));
    }
    return new Tensor(storage, dtype, shape, contiguousStrides(shape), 0);
  }

  /** A zero-filled CPU tensor. */
  public static Tensor zeros(DType dtype, int... shape) {
    return contiguousOver(Storage.allocateHost(numel(shape) * dtype.byteSize()), dtype, shape);
  }

  /** A CPU F32 tensor holding a copy of {@code data}. */
  public static Tensor of(float[] data, int... shape) {
    if (numel(shape) != data.length) {
      throw new IllegalArgumentException(
          data.length + " values do not fill shape " + Arrays.toString(shape));
    }
    Tensor t = zeros(DType.F32, shape);
    MemorySegment.copy(data, 0, t.storage.segment(), F32, 0, data.length);
    return t;
  }

  /** A CPU I64 tensor holding a copy of {@code data}. */
  public static Tensor ofLongs(long[] data, int... shape) {
    if (numel(shape) != data.length) {
      throw new IllegalArgumentException(
          data.length + " values do not fill shape " + Arrays.toString(shape));
    }
    Tensor t = zeros(DType.I64, shape);
    MemorySegment.copy(
        data, 0, t.storage.segment(), ValueLayout.JAVA_LONG_UNALIGNED, 0, data.length);
    return t;
  }

  /** A CPU F32 scalar-filled tensor. */
  public static Tensor full(float value, int... shape) {
    Tensor t = zeros(DType.F32, shape);
    long n = t.numel();
    for (long i = 0; i < n; i++) {
      t.storage.segment().setAtIndex(ValueLayout.JAVA_FLOAT, i, value);
    }
    return t;
  }

  public static long numel(int... shape) {
    long n = 1;
    for (int d : shape) {
      n *= d;
    }
    return n;
  }

  public static long[] contiguousStrides(int[] shape) {
    long[] s = new long[shape.length];
    long acc = 1;
    for (int i = shape.length - 1; i >= 0; i--) {
      s[i] = acc;
      acc *= shape[i];
    }
    return s;
  }

  // ---- metadata -------------------------------------------------------------------------------

  public Storage storage() {
    return storage;
  }

  public DType dtype() {
    return dtype;
  }

  public Device device() {
    return storage.device();
  }

  public int[] shape() {
    return shape.clone();
  }

  public long[] strides() {
    return strides.clone();
  }

  /** Offset of the first element in the storage, in elements. */
  public long offset() {
    return offset;
  }

  public int rank() {
    return shape.length;
  }

  /** Size of dimension {@code d}; negative {@code d} counts from the end. */
  public int dim(int d) {
    return shape[axis(d)];
  }

  public long stride(int d) {
    return strides[axis(d)];
  }

  public long numel() {
    return numel(shape);
  }

  public long byteSize() {
    return numel() * dtype.byteSize();
  }

  /** True when elements are laid out densely in row-major order. */
  public boolean isContiguous() {
    long acc = 1;
    for (int i = shape.length - 1; i >= 0; i--) {
      if (shape[i] != 1 && strides[i] != acc) {
        return false;
      }
      acc *= shape[i];
    }
    return true;
  }

  /** The bytes this (contiguous) tensor occupies. */
  public MemorySegment segment() {
    if (!isContiguous()) {
      throw new IllegalStateException("tensor " + this + " is not contiguous");
    }
    return storage.segment().asSlice(offset * dtype.byteSize(), byteSize());
  }

  /** Normalises a possibly negative axis. */
  public int axis(int d) {
    int a = d < 0 ? d + shape.length : d;
    if (a < 0 || a >= shape.length) {
      throw new IllegalArgumentException("axis " + d + " out of range for rank " + shape.length);
    }
    return a;
  }

  // ---- views ----------------------------------------------------------------------------------

  /** A view with a new shape; one dimension may be -1. Needs contiguous data. */
  public Tensor reshape(int... newShape) {
    int[] ns = newShape.clone();
    int infer = -1;
    long known = 1;
    for (int i = 0; i < ns.length; i++) {
      if (ns[i] == -1) {
        if (infer >= 0) {
          throw new IllegalArgumentException("more than one -1 in " + Arrays.toString(newShape));
        }
        infer = i;
      } else {
        known *= ns[i];
      }
    }
    if (infer >= 0) {
      if (known == 0 || numel() % known != 0) {
        throw new IllegalArgumentException(
            "cannot reshape " + Arrays.toString(shape) + " to " + Arrays.toString(newShape));
      }
      ns[infer] = (int) (numel() / known);
    }
    if (numel(ns) != numel()) {
      throw new IllegalArgumentException(
          "cannot reshape " + Arrays.toString(shape) + " to " + Arrays.toString(newShape));
    }
    if (!isContiguous()) {
      throw new IllegalStateException(
          "reshape of a non-contiguous view " + this + "; make it contiguous first");
    }
    return new Tensor(storage, dtype, ns, contiguousStrides(ns), offset);
  }

  /** Reorders dimensions: result dim i is this tensor's dim {@code order[i]}. */
  public Tensor permute(int... order) {
    if (order.length != shape.length) {
      throw new IllegalArgumentException(
          "permutation " + Arrays.toString(order) + " for rank " + shape.length);
    }
    int[] ns = new int[order.length];
    long[] st = new long[order.length];
    boolean[] seen = new boolean[order.length];
    for (int i = 0; i < order.length; i++) {
      int a = axis(order[i]);
      if (seen[a]) {
        throw new IllegalArgumentException(
            "repeated axis in permutation " + Arrays.toString(order));
      }
      seen[a] = true;
      ns[i] = shape[a];
      st[i] = strides[a];
    }
    return new Tensor(storage, dtype, ns, st, offset);
  }

  public Tensor transpose(int a, int b) {
    int[] order = new int[shape.length];
    for (int i = 0; i < order.length; i++) {
      order[i] = i;
    }
    order[axis(a)] = axis(b);
    order[axis(b)] = axis(a);
    return permute(order);
  }

  /** Elements {@code [start, end)} along {@code dim}. */
  public Tensor slice(int dim, int start, int end) {
    int a = axis(dim);
    if (start < 0 || end > shape[a] || start > end) {
      throw new IllegalArgumentException(
          "slice ["
              + start
              + ", "
              + end
              + ") out of range for dim "
              + a
              + " of "
              + Arrays.toString(shape));
    }
    int[] ns = shape.clone();
    ns[a] = end - start;
    return new Tensor(storage, dtype, ns, strides, offset + start * strides[a]);
  }

  /** Index {@code index} along {@code dim}, removing that dimension. */
  public Tensor select(int dim, int index) {
    int a = axis(dim);
    if (index < 0 || index >= shape[a]) {
      throw new IllegalArgumentException(
          "index " + index + " out of range for dim " + a + " of " + Arrays.toString(shape));
    }
    int[] ns = new int[shape.length - 1];
    long[] st = new long[shape.length - 1];
    for (int i = 0, j = 0; i < shape.length; i++) {
      if (i != a) {
        ns[j] = shape[i];
        st[j++] = strides[i];
      }
    }
    return new Tensor(storage, dtype, ns, st, offset + index * strides[a]);
  }

  /** Inserts a dimension of size 1 at {@code dim} (which may equal rank). */
  public Tensor unsqueeze(int dim) {
    int a = dim < 0 ? dim + shape.length + 1 : dim;
    if (a < 0 || a > shape.length) {
      throw new IllegalArgumentException("unsqueeze axis " + dim + " for rank " + shape.length);
    }
    int[] ns = new int[shape.length + 1];
    long[] st = new long[shape.length + 1];
    for (int i = 0, j = 0; i < ns.length; i++) {
      if (i == a) {
        ns[i] = 1;
        st[i] = (j < shape.length ? strides[j] * shape[j] : 1);
      } else {
        ns[i] = shape[j];
        st[i] = strides[j++];
      }
    }
    return new Tensor(storage, dtype, ns, st, offset);
  }

  /** Removes dimension {@code dim}, which must have size 1. */
  public Tensor squeeze(int dim) {
    int a = axis(dim);
    if (shape[a] != 1) {
      throw new IllegalArgumentException(
          "cannot squeeze dim " + a + " of " + Arrays.toString(shape));
    }
    return select(a, 0);
  }

  /**
   * Broadcasts size-1 dimensions to {@code newShape} with stride 0 (leading dims may be added); -1
   * keeps a dimension.
   */
  public Tensor expand(int... newShape) {
    if (newShape.length < shape.length) {
      throw new IllegalArgumentException(
          "cannot expand " + Arrays.toString(shape) + " to " + Arrays.toString(newShape));
    }
    int lead = newShape.length - shape.length;
    int[] ns = new int[newShape.length];
    long[] st = new long[newShape.length];
    for (int i = 0; i < newShape.length; i++) {
      if (i < lead) {
        ns[i] = newShape[i];
        st[i] = 0;
        continue;
      }
      int src = shape[i - lead];
      int want = newShape[i] == -1 ? src : newShape[i];
      if (src == want) {
        ns[i] = src;
        st[i] = strides[i - lead];
      } else if (src == 1) {
        ns[i] = want;
        st[i] = 0;
      } else {
        throw new IllegalArgumentException(
            "cannot expand " + Arrays.toString(shape) + " to " + Arrays.toString(newShape));
      }
    }
    return new Tensor(storage, dtype, ns, st, offset);
  }

  // ---- host element access (CPU only) ---------------------------------------------------------

  private void requireHost() {
    if (storage.device().kind() != Device.Kind.CPU) {
      throw new IllegalStateException("element access on a " + storage.device() + " tensor");
    }
  }

  /** Storage element index of the element at {@code flat} in row-major order of this view. */
  public long elementOffset(long flat) {
    long off = offset;
    for (int i = shape.length - 1; i >= 0; i--) {
      int d = shape[i];
      long idx = flat % d;
      flat /= d;
      off += idx * strides[i];
    }
    return off;
  }

  private long elementOffset(int[] index) {
    if (index.length != shape.length) {
      throw new IllegalArgumentException(
          "index of rank " + index.length + " for shape " + Arrays.toString(shape));
    }
    long off = offset;
    for (int i = 0; i < index.length; i++) {
      if (index[i] < 0 || index[i] >= shape[i]) {
        throw new IndexOutOfBoundsException(
            "index " + Arrays.toString(index) + " out of shape " + Arrays.toString(shape));
      }
      off += index[i] * strides[i];
    }
    return off;
  }

  /** Reads the storage element at element offset {@code off} as float, whatever the dtype. */
  private float readAsFloat(long off) {
    MemorySegment s = storage.segment();
    long b = off * dtype.byteSize();
    return switch (dtype) {
      case F32 -> s.get(F32, b);
      case F16 -> Float.float16ToFloat(s.get(I16, b));
      case BF16 -> DType.bf16ToFloat(s.get(I16, b));
      case F64 -> (float) s.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, b);
      case I64 -> (float) s.get(ValueLayout.JAVA_LONG_UNALIGNED, b);
      case I32 -> (float) s.get(ValueLayout.JAVA_INT_UNALIGNED, b);
      case I8 -> (float) s.get(ValueLayout.JAVA_BYTE, b);
      case U8 -> (float) (s.get(ValueLayout.JAVA_BYTE, b) & 0xff);
      case BOOL -> s.get(ValueLayout.JAVA_BYTE, b) != 0 ? 1f : 0f;
    };
  }

  private long readAsLong(long off) {
    MemorySegment s = storage.segment();
    long b = off * dtype.byteSize();
    return switch (dtype) {
      case I64 -> s.get(ValueLayout.JAVA_LONG_UNALIGNED, b);
      case I32 -> s.get(ValueLayout.JAVA_INT_UNALIGNED, b);
      case I8 -> s.get(ValueLayout.JAVA_BYTE, b);
      case U8 -> s.get(ValueLayout.JAVA_BYTE, b) & 0xff;
      case BOOL -> s.get(ValueLayout.JAVA_BYTE, b) != 0 ? 1 : 0;
      default -> (long) readAsFloat(off);
    };
  }

  private void writeFloat(long off, float v) {
    MemorySegment s = storage.segment();
    long b = off * dtype.byteSize();
    switch (dtype) {
      case F32 -> s.set(F32, b, v);
      case F16 -> s.set(I16, b, Float.floatToFloat16(v));
      case BF16 -> s.set(I16, b, DType.floatToBf16(v));
      case F64 -> s.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, b, v);
      case I64 -> s.set(ValueLayout.JAVA_LONG_UNALIGNED, b, (long) v);
      case I32 -> s.set(ValueLayout.JAVA_INT_UNALIGNED, b, (int) v);
      case I8, U8 -> s.set(ValueLayout.JAVA_BYTE, b, (byte) (int) v);
      case BOOL -> s.set(ValueLayout.JAVA_BYTE, b, (byte) (v != 0 ? 1 : 0));
    }
  }

  /** The element at {@code index}, widened to float. */
  public float getFloat(int... index) {
    requireHost();
    return readAsFloat(elementOffset(index));
  }

  /** The element at {@code index} as a long (integer dtypes exactly). */
  public long getLong(int... index) {
    requireHost();
    return readAsLong(elementOffset(index));
  }

  /** Writes one element, narrowing from float to this tensor's dtype. */
  public void setFloat(float value, int... index) {
    requireHost();
    writeFloat(elementOffset(index), value);
  }

  /** All elements in row-major order of this view, widened to float. */
  public float[] toFloatArray() {
    requireHost();
    long n = numel();
    if (n > Integer.MAX_VALUE) {
      throw new IllegalStateException("tensor too large for a Java array: " + this);
    }
    float[] out = new float[(int) n];
    if (dtype == DType.F32 && isContiguous()) {
      MemorySegment.copy(storage.segment(), F32, offset * 4, out, 0, out.length);
      return out;
    }
    int rank = shape.length;
    int inner = rank == 0 ? 1 : shape[rank - 1];
    long innerStride = rank == 0 ? 0 : strides[rank - 1];
    // Row by row: one index computation per innermost row, not per element.
    for (int row = 0; inner > 0 && row < out.length / inner; row++) {
      long start = elementOffset((long) row * inner);
      int base = row * inner;
      if (dtype == DType.F32 && innerStride == 1) {
        MemorySegment.copy(storage.segment(), F32, start * 4, out, base, inner);
      } else {
        for (int i = 0; i < inner; i++) {
          out[base + i] = readAsFloat(start + i * innerStride);
        }
      }
    }
    return out;
  }

  /** All elements in row-major order as longs. */
  public long[] toLongArray() {
    requireHost();
    long[] out = new long[Math.toIntExact(numel())];
    for (int i = 0; i < out.length; i++) {
      out[i] = readAsLong(elementOffset(i));
    }
    return out;
  }

  /** A contiguous CPU copy of this view in {@code target} dtype (widening or narrowing). */
  public Tensor toHost(DType target) {
    requireHost();
    Tensor out = zeros(target, shape);
    long n = numel();
    boolean integral = !dtype.isFloating() && !target.isFloating();
    for (long i = 0; i < n; i++) {
      long src = elementOffset(i);
      if (integral) {
        long v = readAsLong(src);
        MemorySegment s = out.storage.segment();
        long b = i * target.byteSize();
        switch (target) {
          case I64 -> s.set(ValueLayout.JAVA_LONG_UNALIGNED, b, v);
          case I32 -> s.set(ValueLayout.JAVA_INT_UNALIGNED, b, (int) v);
          default -> s.set(ValueLayout.JAVA_BYTE, b, (byte) v);
        }
      } else {
        out.writeFloat(i, readAsFloat(src));
      }
    }
    return out;
  }

  /** A contiguous F32 CPU copy (this tensor itself when already so). */
  public Tensor toF32() {
    return dtype == DType.F32 && isContiguous() && device().kind() == Device.Kind.CPU
        ? this
        : toHost(DType.F32);
  }

  @Override
  public String toString() {
    return "Tensor(" + dtype + Arrays.toString(shape) + " on " + device() + ")";
  }
}

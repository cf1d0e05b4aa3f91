package dev.stepweave.cuda.cudnn;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * One cuDNN backend descriptor with typed setters that encode each attribute's elements as the C
 * API reads them (see {@link Cudnn} for the layouts). cuDNN copies the elements during the call, so
 * each setter's host memory lives only for that call. Created and destroyed by {@link
 * CudnnDescriptors}.
 */
final class CudnnDescriptor {
  private final CudnnGraphApi api;
  private final long handle;

  CudnnDescriptor(CudnnGraphApi api, long handle) {
    this.api = api;
    this.handle = handle;
  }

  /** The {@code cudnnBackendDescriptor_t}. */
  long handle() {
    return handle;
  }

  /** {@code CUDNN_TYPE_INT64} elements. */
  CudnnDescriptor int64s(int attribute, long... values) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment e = arena.allocateFrom(ValueLayout.JAVA_LONG, values);
      api.set(handle, attribute, Cudnn.CUDNN_TYPE_INT64, values.length, e);
    }
    return this;
  }

  /** One element of a C-enum-valued type ({@code CUDNN_TYPE_DATA_TYPE}, {@code ..._HEUR_MODE}…). */
  CudnnDescriptor enumValue(int attribute, int attributeType, int value) {
    try (Arena arena = Arena.ofConfined()) {
      api.set(handle, attribute, attributeType, 1, arena.allocateFrom(ValueLayout.JAVA_INT, value));
    }
    return this;
  }

  /** One {@code CUDNN_TYPE_FLOAT}: a C {@code float}. */
  CudnnDescriptor float32(int attribute, float value) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment e = arena.allocateFrom(ValueLayout.JAVA_FLOAT, value);
      api.set(handle, attribute, Cudnn.CUDNN_TYPE_FLOAT, 1, e);
    }
    return this;
  }

  /** A {@code cudnnDataType_t}. */
  CudnnDescriptor dataType(int attribute, int cudnnDataType) {
    return enumValue(attribute, Cudnn.CUDNN_TYPE_DATA_TYPE, cudnnDataType);
  }

  /** A C {@code bool}: one byte. */
  CudnnDescriptor bool(int attribute, boolean value) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment e = arena.allocateFrom(ValueLayout.JAVA_BYTE, (byte) (value ? 1 : 0));
      api.set(handle, attribute, Cudnn.CUDNN_TYPE_BOOLEAN, 1, e);
    }
    return this;
  }

  /** {@code CUDNN_TYPE_BACKEND_DESCRIPTOR} elements: the descriptors' handles. */
  CudnnDescriptor descriptors(int attribute, CudnnDescriptor... values) {
    long[] handles = new long[values.length];
    for (int i = 0; i < values.length; i++) {
      handles[i] = values[i].handle;
    }
    return addresses(attribute, Cudnn.CUDNN_TYPE_BACKEND_DESCRIPTOR, handles);
  }

  /** The {@code cudnnHandle_t} a graph is built for ({@code CUDNN_TYPE_HANDLE}). */
  CudnnDescriptor cudnnHandle(int attribute, long cudnnHandle) {
    return addresses(attribute, Cudnn.CUDNN_TYPE_HANDLE, cudnnHandle);
  }

  /** {@code CUDNN_TYPE_VOID_PTR} elements: device or host addresses. */
  CudnnDescriptor pointers(int attribute, long... addresses) {
    return addresses(attribute, Cudnn.CUDNN_TYPE_VOID_PTR, addresses);
  }

  private CudnnDescriptor addresses(int attribute, int attributeType, long... values) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment e = arena.allocateFrom(ValueLayout.JAVA_LONG, values);
      api.set(handle, attribute, attributeType, values.length, e);
    }
    return this;
  }

  /** Finalizes the descriptor ({@code cudnnBackendFinalize}): its attributes are complete. */
  CudnnDescriptor finish() {
    api.finish(handle);
    return this;
  }

  /** A single {@code CUDNN_TYPE_INT64} attribute of a finalized descriptor. */
  long int64(int attribute) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment e = arena.allocate(ValueLayout.JAVA_LONG);
      api.get(handle, attribute, Cudnn.CUDNN_TYPE_INT64, 1, e);
      return e.get(ValueLayout.JAVA_LONG, 0);
    }
  }

  /** Up to {@code max} elements of a C-enum-valued attribute (4-byte ints) of a descriptor. */
  int[] enums(int attribute, int attributeType, int max) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment e = arena.allocate(ValueLayout.JAVA_INT, max);
      long n = Math.min(max, api.get(handle, attribute, attributeType, max, e));
      return e.asSlice(0, n * Integer.BYTES).toArray(ValueLayout.JAVA_INT);
    }
  }

  /**
   * A descriptor-valued attribute: asks for the count, creates that many descriptors of {@code
   * elementType} in {@code owner} and lets cuDNN fill them (the C API's protocol).
   */
  List<CudnnDescriptor> descriptors(int attribute, int elementType, CudnnDescriptors owner) {
    long n = api.get(handle, attribute, Cudnn.CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, MemorySegment.NULL);
    List<CudnnDescriptor> out = new ArrayList<>();
    if (n == 0) {
      return out;
    }
    long[] handles = new long[Math.toIntExact(n)];
    for (int i = 0; i < handles.length; i++) {
      CudnnDescriptor d = owner.create(elementType);
      out.add(d);
      handles[i] = d.handle;
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment e = arena.allocateFrom(ValueLayout.JAVA_LONG, handles);
      long filled = api.get(handle, attribute, Cudnn.CUDNN_TYPE_BACKEND_DESCRIPTOR, n, e);
      return out.subList(0, (int) Math.min(filled, n));
    }
  }
}

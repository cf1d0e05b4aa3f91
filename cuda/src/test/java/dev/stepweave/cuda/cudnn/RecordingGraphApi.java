package dev.stepweave.cuda.cudnn;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * A {@link CudnnGraphApi} without cuDNN: records every call and renders each descriptor as the
 * cuDNN API log would show it: its type, then each attribute as {@code name/type=[values]}, then
 * {@code final} once finalized. Descriptor-valued elements are rendered as {@code T<uid>} for
 * tensors and {@code #<creation index>} otherwise; the cuDNN handle as {@code H}.
 */
final class RecordingGraphApi implements CudnnGraphApi {
  static final long HANDLE = 0x7e57;

  private final Map<Long, Integer> types = new LinkedHashMap<>();
  private final Map<Long, StringBuilder> rendered = new LinkedHashMap<>();
  private final Map<Long, Long> uids = new LinkedHashMap<>();
  final List<String> calls = new ArrayList<>();

  /** Answers {@link #get}: the attribute's element count, after filling what was asked for. */
  LongSupplier getAnswer = () -> 0;

  /**
   * What {@link #get} writes for a one-element INT64 attribute (a plan's workspace size, an
   * engine's index): the next value queued for it, else nothing (the caller's zeroed memory).
   */
  final Map<Integer, Deque<Long>> int64Values = new HashMap<>();

  private long next = 0x1000;

  @Override
  public long create(int descriptorType) {
    long h = next += 0x10;
    types.put(h, descriptorType);
    rendered.put(h, new StringBuilder(Integer.toString(descriptorType)));
    calls.add("create " + descriptorType);
    return h;
  }

  @Override
  public void set(long d, int attribute, int attributeType, long count, MemorySegment elements) {
    byte[] bytes = elements.toArray(ValueLayout.JAVA_BYTE);
    ByteBuffer buf = ByteBuffer.wrap(bytes).order(ByteOrder.nativeOrder());
    List<String> values = new ArrayList<>();
    int size = elementSize(attributeType);
    if (bytes.length != count * size) {
      throw new AssertionError(
          "attribute " + attribute + ": " + bytes.length + " bytes for " + count + " elements");
    }
    for (int i = 0; i < count; i++) {
      values.add(
          switch (size) {
            case 1 -> buf.get() != 0 ? "true" : "false";
            case 4 ->
                attributeType == Cudnn.CUDNN_TYPE_FLOAT
                    ? Float.toString(buf.getFloat())
                    : Integer.toString(buf.getInt());
            default -> name(attributeType, buf.getLong());
          });
    }
    if (attribute == Cudnn.CUDNN_ATTR_TENSOR_UNIQUE_ID) {
      uids.put(d, Long.parseLong(values.getFirst()));
    }
    rendered.get(d).append(" ").append(attribute).append('/').append(attributeType);
    rendered.get(d).append("=").append(values.toString().replace(" ", ""));
    calls.add("set " + attribute);
  }

  private static int elementSize(int attributeType) {
    return switch (attributeType) {
      case Cudnn.CUDNN_TYPE_BOOLEAN -> 1;
      case Cudnn.CUDNN_TYPE_INT64,
          Cudnn.CUDNN_TYPE_HANDLE,
          Cudnn.CUDNN_TYPE_BACKEND_DESCRIPTOR,
          Cudnn.CUDNN_TYPE_VOID_PTR ->
          8;
      default -> 4;
    };
  }

  private String name(int attributeType, long value) {
    if (attributeType == Cudnn.CUDNN_TYPE_HANDLE) {
      return value == HANDLE ? "H" : "handle?" + value;
    }
    if (attributeType != Cudnn.CUDNN_TYPE_BACKEND_DESCRIPTOR) {
      return Long.toString(value);
    }
    if (uids.containsKey(value)) {
      return "T" + uids.get(value);
    }
    return "#" + new ArrayList<>(types.keySet()).indexOf(value);
  }

  /** The numerical notes each engine queried reports, in turn. */
  final Deque<int[]> numericalNotes = new ArrayDeque<>();

  @Override
  public long get(
      long d, int attribute, int attributeType, long requested, MemorySegment elements) {
    calls.add(
        "get "
            + attribute
            + " "
            + requested
            + (elements.equals(MemorySegment.NULL) ? " NULL" : ""));
    Deque<Long> values = int64Values.get(attribute);
    if (attributeType == Cudnn.CUDNN_TYPE_INT64 && requested >= 1 && values != null) {
      Long value = values.poll();
      if (value != null) {
        elements.set(ValueLayout.JAVA_LONG, 0, value);
      }
    }
    if (attributeType == Cudnn.CUDNN_TYPE_NUMERICAL_NOTE) {
      // One engine's notes per query, in turn; none once the queue is empty.
      int[] notes = numericalNotes.isEmpty() ? new int[0] : numericalNotes.poll();
      for (int i = 0; i < notes.length; i++) {
        elements.setAtIndex(ValueLayout.JAVA_INT, i, notes[i]);
      }
      return notes.length;
    }
    return getAnswer.getAsLong();
  }

  @Override
  public void finish(long d) {
    rendered.get(d).append(" final");
    calls.add("finish " + types.get(d));
  }

  @Override
  public void destroy(long d) {
    calls.add("destroy " + types.get(d));
  }

  /** Each descriptor's rendering, in creation order. */
  List<String> descriptors() {
    return rendered.values().stream().map(StringBuilder::toString).toList();
  }

  /** The rendering of {@code descriptor}. */
  String of(CudnnDescriptor descriptor) {
    return rendered.get(descriptor.handle()).toString();
  }
}

package dev.stepweave.tensor.io;

import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Tensor;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** Writes safetensors files that the reference reader (and {@link SafetensorsFile}) accept. */
public final class Safetensors {
  private Safetensors() {}

  /**
   * Writes {@code tensors} (CPU tensors of any dtype and any strides) to {@code file}, each as
   * contiguous row-major data in its own dtype. The file appears atomically: it is written beside
   * its final name and moved into place, so a reader never sees half a checkpoint.
   *
   * <p>The layout is the reference writer's, byte for byte: data ordered by dtype (the reference
   * order, largest elements first) then name, so every tensor starts aligned to its element size,
   * and header entries in that same order after {@code __metadata__} (whose keys are sorted).
   *
   * @param metadata the {@code __metadata__} strings; null or empty for none
   */
  public static void write(Path file, Map<String, Tensor> tensors, Map<String, String> metadata) {
    List<Map.Entry<String, Tensor>> layout = new ArrayList<>(tensors.entrySet());
    for (Map.Entry<String, Tensor> e : layout) {
      requireWritable(file, e.getKey(), e.getValue());
    }
    layout.sort(
        Comparator.comparingInt((Map.Entry<String, Tensor> e) -> -layoutRank(e.getValue().dtype()))
            .thenComparing(Map.Entry::getKey));

    List<SafetensorsHeader.StoredTensor> stored = new ArrayList<>();
    long dataBytes = 0;
    for (Map.Entry<String, Tensor> e : layout) {
      Tensor t = e.getValue();
      long end = dataBytes + t.byteSize();
      stored.add(
          new SafetensorsHeader.StoredTensor(e.getKey(), t.dtype(), t.shape(), dataBytes, end));
      dataBytes = end;
    }
    byte[] header =
        SafetensorsHeader.encode(stored, metadata == null ? Map.of() : new TreeMap<>(metadata));

    Path partial = file.resolveSibling(file.getFileName() + ".partial");
    try {
      writeFile(partial, header, layout, stored, dataBytes);
      Files.move(
          partial, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      deleteQuietly(partial);
      throw new CheckpointException(file + ": cannot write (" + e.getMessage() + ")", e);
    } catch (RuntimeException e) {
      deleteQuietly(partial);
      throw e;
    }
  }

  private static void writeFile(
      Path target,
      byte[] header,
      List<Map.Entry<String, Tensor>> layout,
      List<SafetensorsHeader.StoredTensor> stored,
      long dataBytes)
      throws IOException {
    long total = Long.BYTES + header.length + dataBytes;
    try (FileChannel channel =
            FileChannel.open(
                target,
                StandardOpenOption.CREATE,
                StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.READ,
                StandardOpenOption.WRITE);
        Arena arena = Arena.ofConfined()) {
      MemorySegment out = channel.map(FileChannel.MapMode.READ_WRITE, 0, total, arena);
      out.set(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0, header.length);
      MemorySegment.copy(header, 0, out, ValueLayout.JAVA_BYTE, Long.BYTES, header.length);
      MemorySegment data = out.asSlice(Long.BYTES + header.length);
      for (int i = 0; i < layout.size(); i++) {
        SafetensorsHeader.StoredTensor s = stored.get(i);
        copyRowMajor(layout.get(i).getValue(), data.asSlice(s.begin(), s.byteSize()));
      }
      out.force();
    }
  }

  private static void deleteQuietly(Path partial) {
    try {
      Files.deleteIfExists(partial);
    } catch (IOException ignored) {
      // The original failure is the one worth reporting.
    }
  }

  /**
   * The reference writer's dtype order (its enum's declaration order), which rises with element
   * size; data is laid out from the highest rank down.
   */
  private static int layoutRank(DType dtype) {
    return switch (dtype) {
      case BOOL -> 0;
      case U8 -> 1;
      case I8 -> 2;
      case F16 -> 3;
      case BF16 -> 4;
      case I32 -> 5;
      case F32 -> 6;
      case F64 -> 7;
      case I64 -> 8;
    };
  }

  private static void requireWritable(Path file, String name, Tensor t) {
    if (name.equals(SafetensorsHeader.METADATA_KEY)) {
      throw new IllegalArgumentException(
          file + ": '" + SafetensorsHeader.METADATA_KEY + "' cannot name a tensor");
    }
    if (t.device().kind() != Device.Kind.CPU) {
      throw new IllegalArgumentException(
          file + ": tensor '" + name + "' is on " + t.device() + "; download it first");
    }
  }

  /** Copies a strided view into {@code dst} densely, a whole innermost row at a time. */
  private static void copyRowMajor(Tensor t, MemorySegment dst) {
    MemorySegment src = t.storage().segment();
    long elementBytes = t.dtype().byteSize();
    if (t.isContiguous()) {
      MemorySegment.copy(t.segment(), 0, dst, 0, t.byteSize());
      return;
    }
    boolean denseRows = t.stride(-1) == 1;
    long row = denseRows ? t.dim(-1) : 1;
    long n = t.numel();
    for (long first = 0; first < n; first += row) {
      MemorySegment.copy(
          src,
          t.elementOffset(first) * elementBytes,
          dst,
          first * elementBytes,
          row * elementBytes);
    }
  }
}

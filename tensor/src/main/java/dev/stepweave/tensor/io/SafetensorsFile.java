package dev.stepweave.tensor.io;

import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Storage;
import dev.stepweave.tensor.Tensor;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.Set;

/**
 * One memory-mapped safetensors file. The whole header is validated when the file is opened, so a
 * truncated or inconsistent file fails before any weight is used. {@link #load} returns views over
 * the mapping in the stored dtype (no copy); {@link #loadF32} returns an independent F32 copy.
 *
 * <p>{@link #close} unmaps the file: views returned by {@link #load} must not be used afterwards
 * (access then fails with {@link IllegalStateException}); upload or copy what must outlive the
 * file. The mapping is shared, so views may be read from any thread while the file is open.
 */
public final class SafetensorsFile implements TensorSource {
  /** The reference reader's limit; a larger header means a corrupt length field, not a model. */
  private static final long MAX_HEADER_BYTES = 100L << 20;

  private static final ValueLayout.OfLong HEADER_LENGTH =
      ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

  private final Path file;
  private final Arena arena;
  private final MemorySegment data;
  private final SafetensorsHeader header;

  private SafetensorsFile(Path file, Arena arena, MemorySegment data, SafetensorsHeader header) {
    this.file = file;
    this.arena = arena;
    this.data = data;
    this.header = header;
  }

  /**
   * Maps and validates {@code file}.
   *
   * @throws CheckpointException naming the file (and the tensor) when it is missing, truncated or
   *     inconsistent
   */
  public static SafetensorsFile open(Path file) {
    Arena arena = Arena.ofShared();
    try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
      long size = channel.size();
      if (size < Long.BYTES) {
        throw new CheckpointException(
            file + ": only " + size + " bytes, too short for a safetensors file (truncated?)");
      }
      MemorySegment whole = channel.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
      long headerBytes = whole.get(HEADER_LENGTH, 0);
      if (headerBytes < 0 || headerBytes > size - Long.BYTES) {
        throw new CheckpointException(
            file
                + ": header length "
                + Long.toUnsignedString(headerBytes)
                + " exceeds the file's "
                + size
                + " bytes (truncated file?)");
      }
      if (headerBytes > MAX_HEADER_BYTES) {
        throw new CheckpointException(
            file + ": header length " + headerBytes + " exceeds " + MAX_HEADER_BYTES + " bytes");
      }
      byte[] json = whole.asSlice(Long.BYTES, headerBytes).toArray(ValueLayout.JAVA_BYTE);
      MemorySegment data = whole.asSlice(Long.BYTES + headerBytes);
      SafetensorsHeader header = SafetensorsHeader.parse(file, json, data.byteSize());
      return new SafetensorsFile(file, arena, data, header);
    } catch (NoSuchFileException e) {
      arena.close();
      throw new CheckpointException(file + ": no such file", e);
    } catch (IOException e) {
      arena.close();
      throw new CheckpointException(file + ": cannot map (" + e.getMessage() + ")", e);
    } catch (RuntimeException e) {
      arena.close();
      throw e;
    }
  }

  public Path file() {
    return file;
  }

  @Override
  public Set<String> keys() {
    return header.tensors().keySet();
  }

  @Override
  public TensorInfo info(String key) {
    SafetensorsHeader.StoredTensor t = stored(key);
    return new TensorInfo(t.name(), t.dtype(), t.shape());
  }

  /**
   * A contiguous CPU view over the mapped bytes, in the stored dtype. Valid until {@link #close}.
   * The bytes need not be aligned: readers must use unaligned layouts.
   */
  @Override
  public Tensor load(String key) {
    SafetensorsHeader.StoredTensor t = stored(key);
    if (!arena.scope().isAlive()) {
      throw new IllegalStateException(file + " is closed");
    }
    Storage storage = new Storage(data.asSlice(t.begin(), t.byteSize()), Device.CPU);
    return Tensor.contiguousOver(storage, t.dtype(), t.shape());
  }

  @Override
  public Path fileOf(String key) {
    return file;
  }

  @Override
  public Map<String, String> metadata() {
    return header.metadata();
  }

  /** Unmaps the file; views from {@link #load} become unusable. */
  @Override
  public void close() {
    if (arena.scope().isAlive()) {
      arena.close();
    }
  }

  private SafetensorsHeader.StoredTensor stored(String key) {
    SafetensorsHeader.StoredTensor t = header.tensors().get(key);
    if (t == null) {
      throw new CheckpointException(file + ": no tensor '" + key + "'");
    }
    return t;
  }

  @Override
  public String toString() {
    return "SafetensorsFile(" + file + ", " + header.tensors().size() + " tensors)";
  }
}

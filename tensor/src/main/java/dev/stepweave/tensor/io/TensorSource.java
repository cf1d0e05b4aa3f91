package dev.stepweave.tensor.io;

import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Set;

/**
 * Named tensors stored somewhere: one safetensors file, a sharded checkpoint, or a recording.
 * Loading is lazy: a tensor is read (memory-mapped) only when asked for.
 */
public interface TensorSource extends AutoCloseable {

  /** All tensor names. */
  Set<String> keys();

  /** Shape and stored dtype of {@code key} without reading its data. */
  TensorInfo info(String key);

  /**
   * The tensor as stored, on the CPU (a view of the mapped file where possible).
   *
   * @throws CheckpointException naming the file and the tensor when it is absent or corrupt
   */
  Tensor load(String key);

  /**
   * A contiguous F32 CPU copy of the tensor (floating types widened, integers converted), which
   * stays valid after this source is closed.
   *
   * @throws CheckpointException naming the file and the tensor when it is absent or corrupt
   */
  default Tensor loadF32(String key) {
    Tensor stored = load(key);
    if (stored.dtype() != DType.F32 || !stored.isContiguous()) {
      return stored.toHost(DType.F32);
    }
    Tensor copy = Tensor.zeros(DType.F32, stored.shape());
    MemorySegment.copy(stored.segment(), 0, copy.storage().segment(), 0, stored.byteSize());
    return copy;
  }

  /**
   * The file that holds {@code key}, for error messages. For a key it does not hold this is the
   * file that lists the tensors (the checkpoint itself, or a sharded checkpoint's index), so a
   * "missing tensor" error can name it.
   */
  Path fileOf(String key);

  /** String metadata ({@code __metadata__} of safetensors); empty when none. */
  java.util.Map<String, String> metadata();

  @Override
  void close();

  /** Header entry of one stored tensor. */
  record TensorInfo(String name, DType dtype, int[] shape) {}
}

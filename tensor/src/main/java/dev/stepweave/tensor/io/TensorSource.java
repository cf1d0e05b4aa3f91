package dev.stepweave.tensor.io;

import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Tensor;
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

  /** The file that holds {@code key}, for error messages. */
  Path fileOf(String key);

  /** String metadata ({@code __metadata__} of safetensors); empty when none. */
  java.util.Map<String, String> metadata();

  @Override
  void close();

  /** Header entry of one stored tensor. */
  record TensorInfo(String name, DType dtype, int[] shape) {}
}

package dev.stepweave.cuda.cudnn;

import dev.stepweave.cuda.driver.CudaException;
import java.lang.foreign.MemorySegment;

/**
 * The five calls of cuDNN's backend (graph) API that build and query descriptors, with C argument
 * meanings ({@code cudnnBackendCreateDescriptor}, {@code ...SetAttribute}, {@code ...GetAttribute},
 * {@code ...Finalize}, {@code ...DestroyDescriptor}). {@link Cudnn#GRAPH} calls the library and
 * throws a {@link CudaException} naming the function on an error status; tests record the calls.
 */
interface CudnnGraphApi {
  /** A new descriptor of {@code descriptorType}. */
  long create(int descriptorType);

  /**
   * Sets {@code attribute} to {@code count} elements of {@code attributeType} at {@code elements}.
   */
  void set(long descriptor, int attribute, int attributeType, long count, MemorySegment elements);

  /**
   * Reads up to {@code requested} elements of {@code attribute} into {@code elements} (NULL with
   * {@code requested} 0 asks for the count) and returns how many the attribute has.
   */
  long get(
      long descriptor, int attribute, int attributeType, long requested, MemorySegment elements);

  void finish(long descriptor);

  void destroy(long descriptor);
}

package dev.stepweave.tensor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/**
 * The test suites run with {@code stepweave.cpu.poison}: uninitialised host memory arrives full of
 * 0xFF bytes (NaN as floats), so a CPU kernel that leaves part of its output unwritten fails the
 * tests that read it instead of passing on memory that happened to be zero.
 */
class UninitializedStorageTest {
  @Test
  void theSuitesPoisonUninitialisedMemory() {
    assertTrue(Boolean.getBoolean("stepweave.cpu.poison"), "surefire sets stepweave.cpu.poison");
    Storage s = Storage.allocateHostUninitialized(100);
    assertEquals(100, s.byteSize());
    assertEquals(0, s.segment().address() % 64, "64-byte aligned");
    for (long i = 0; i < 100; i++) {
      assertEquals((byte) 0xFF, s.segment().get(ValueLayout.JAVA_BYTE, i), "byte " + i);
    }
    assertTrue(Float.isNaN(s.segment().get(ValueLayout.JAVA_FLOAT, 0)));
  }

  @Test
  void zeroedMemoryStaysZeroed() {
    Storage s = Storage.allocateHost(100);
    for (long i = 0; i < 100; i++) {
      assertEquals(0, s.segment().get(ValueLayout.JAVA_BYTE, i), "byte " + i);
    }
  }

  /**
   * Garbage uninitialised memory goes back: allocating eight times a 256 MiB limit of it in turn,
   * each block dropped at once, never has more than half of that outstanding (collections, asked
   * for past the limit, free it; without them all 2 GiB would be).
   */
  @Test
  void unreachableBlocksAreFreedByCollections() {
    long limit = 256L << 20;
    long block = 16L << 20;
    HostAllocations allocations = new HostAllocations(limit);
    long most = 0;
    for (long done = 0; done < 8 * limit; done += block) {
      Storage.allocateHostUninitialized(block, allocations);
      most = Math.max(most, allocations.outstanding());
    }
    assertTrue(most <= 4 * limit, most + " bytes outstanding at most, of " + 8 * limit);
  }
}

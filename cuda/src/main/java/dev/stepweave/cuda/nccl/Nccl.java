package dev.stepweave.cuda.nccl;

import static dev.stepweave.cuda.driver.Ffm.INT;
import static dev.stepweave.cuda.driver.Ffm.LONG;
import static dev.stepweave.cuda.driver.Ffm.PTR;

import dev.stepweave.cuda.driver.CudaException;
import dev.stepweave.cuda.driver.CudaLibraries;
import dev.stepweave.cuda.driver.Driver;
import dev.stepweave.cuda.driver.Ffm;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * NCCL ({@code libnccl.so.2}): collectives between devices, for the sequence- and CFG-parallel
 * plans to come. One handle per C function, named after it, and wrappers that check the {@code
 * ncclResult_t} and throw a {@link CudaException} carrying NCCL's own error string. Communicators
 * ({@code ncclComm_t}) and streams are {@code JAVA_LONG} handles, buffers device addresses, as in
 * the rest of the package. Touch this class only when {@link CudaLibraries#nccl()} found the
 * library (loading it resolves the symbols).
 */
public final class Nccl {
  private static final SymbolLookup LIB = CudaLibraries.ncclLookup();

  /** {@code NCCL_UNIQUE_ID_BYTES}: the opaque id ranks share to form a communicator. */
  static final int UNIQUE_ID_BYTES = 128;

  /** {@code ncclUniqueId}, passed by value to {@code ncclCommInitRank}. */
  static final StructLayout UNIQUE_ID =
      MemoryLayout.structLayout(MemoryLayout.sequenceLayout(UNIQUE_ID_BYTES, ValueLayout.JAVA_BYTE))
          .withName("ncclUniqueId");

  /** {@code ncclDataType_t}. */
  public enum DataType {
    INT8(0),
    UINT8(1),
    INT32(2),
    UINT32(3),
    INT64(4),
    UINT64(5),
    FLOAT16(6),
    FLOAT32(7),
    FLOAT64(8),
    BFLOAT16(9);

    final int code;

    DataType(int code) {
      this.code = code;
    }
  }

  /** The built-in {@code ncclRedOp_t} values. */
  public enum ReduceOp {
    SUM(0),
    PROD(1),
    MAX(2),
    MIN(3),
    AVG(4);

    final int code;

    ReduceOp(int code) {
      this.code = code;
    }
  }

  static final MethodHandle ncclGetVersion = Ffm.status(LIB, "ncclGetVersion", PTR);
  static final MethodHandle ncclGetUniqueId = Ffm.status(LIB, "ncclGetUniqueId", PTR);
  static final MethodHandle ncclCommInitRank =
      Ffm.status(LIB, "ncclCommInitRank", PTR, INT, UNIQUE_ID, INT);
  static final MethodHandle ncclCommInitAll = Ffm.status(LIB, "ncclCommInitAll", PTR, INT, PTR);
  static final MethodHandle ncclCommDestroy = Ffm.status(LIB, "ncclCommDestroy", LONG);
  static final MethodHandle ncclCommCount = Ffm.status(LIB, "ncclCommCount", LONG, PTR);
  static final MethodHandle ncclAllReduce =
      Ffm.status(LIB, "ncclAllReduce", LONG, LONG, LONG, INT, INT, LONG, LONG);
  static final MethodHandle ncclBroadcast =
      Ffm.status(LIB, "ncclBroadcast", LONG, LONG, LONG, INT, INT, LONG, LONG);
  static final MethodHandle ncclAllGather =
      Ffm.status(LIB, "ncclAllGather", LONG, LONG, LONG, INT, LONG, LONG);
  static final MethodHandle ncclGroupStart = Ffm.status(LIB, "ncclGroupStart");
  static final MethodHandle ncclGroupEnd = Ffm.status(LIB, "ncclGroupEnd");
  static final MethodHandle ncclGetErrorString =
      Ffm.downcall(LIB, "ncclGetErrorString", FunctionDescriptor.of(PTR, INT));

  private Nccl() {}

  /** NCCL's {@code NCCL_VERSION_CODE}, e.g. 22803 for 2.28.3. */
  public static int version() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
      call("ncclGetVersion", () -> (int) ncclGetVersion.invokeExact(out));
      return out.get(ValueLayout.JAVA_INT, 0);
    }
  }

  /** A fresh communicator id in {@code arena}, to hand to every rank's {@link #initRank}. */
  public static MemorySegment uniqueId(Arena arena) {
    MemorySegment id = arena.allocate(UNIQUE_ID);
    call("ncclGetUniqueId", () -> (int) ncclGetUniqueId.invokeExact(id));
    return id;
  }

  /**
   * This process's rank {@code rank} of an {@code nranks} communicator with {@code id}; the current
   * device is the rank's. Blocks until all ranks joined (call it from one thread per rank, or
   * inside a group).
   */
  public static long initRank(int nranks, MemorySegment id, int rank) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = arena.allocate(ValueLayout.JAVA_LONG);
      call("ncclCommInitRank", () -> (int) ncclCommInitRank.invokeExact(out, nranks, id, rank));
      return out.get(ValueLayout.JAVA_LONG, 0);
    }
  }

  /** One communicator per device of {@code devices}, all in this process; rank i is devices[i]. */
  public static long[] initAll(int... devices) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment comms = arena.allocate(ValueLayout.JAVA_LONG, devices.length);
      MemorySegment list = arena.allocateFrom(ValueLayout.JAVA_INT, devices);
      int n = devices.length;
      call("ncclCommInitAll", () -> (int) ncclCommInitAll.invokeExact(comms, n, list));
      return comms.toArray(ValueLayout.JAVA_LONG);
    }
  }

  public static void destroy(long comm) {
    call("ncclCommDestroy", () -> (int) ncclCommDestroy.invokeExact(comm));
  }

  /** The number of ranks of {@code comm}. */
  public static int count(long comm) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
      call("ncclCommCount", () -> (int) ncclCommCount.invokeExact(comm, out));
      return out.get(ValueLayout.JAVA_INT, 0);
    }
  }

  /**
   * {@code count} elements reduced over all ranks into every rank's {@code recv} (in place when
   * equal).
   */
  public static void allReduce(
      long send, long recv, long count, DataType type, ReduceOp op, long comm, long stream) {
    call(
        "ncclAllReduce",
        () -> (int) ncclAllReduce.invokeExact(send, recv, count, type.code, op.code, comm, stream));
  }

  /** Rank {@code root}'s {@code send} copied into every rank's {@code recv}. */
  public static void broadcast(
      long send, long recv, long count, DataType type, int root, long comm, long stream) {
    call(
        "ncclBroadcast",
        () -> (int) ncclBroadcast.invokeExact(send, recv, count, type.code, root, comm, stream));
  }

  /**
   * Every rank's {@code sendCount} elements, rank i's at offset {@code i·sendCount} of {@code
   * recv}.
   */
  public static void allGather(
      long send, long recv, long sendCount, DataType type, long comm, long stream) {
    call(
        "ncclAllGather",
        () -> (int) ncclAllGather.invokeExact(send, recv, sendCount, type.code, comm, stream));
  }

  /** Starts a group: the calls until {@link #groupEnd} are issued together. */
  public static void groupStart() {
    call("ncclGroupStart", () -> (int) ncclGroupStart.invokeExact());
  }

  public static void groupEnd() {
    call("ncclGroupEnd", () -> (int) ncclGroupEnd.invokeExact());
  }

  /** NCCL's description of {@code ncclResult_t} {@code status}. */
  public static String errorString(int status) {
    try {
      MemorySegment s = (MemorySegment) ncclGetErrorString.invokeExact(status);
      return s.equals(MemorySegment.NULL) ? "unknown NCCL error" : s.reinterpret(256).getString(0);
    } catch (Throwable t) {
      throw Ffm.rethrow("ncclGetErrorString", t);
    }
  }

  private static void call(String name, Driver.CheckedCall call) {
    int status;
    try {
      status = call.invoke();
    } catch (Throwable t) {
      throw Ffm.rethrow(name, t);
    }
    if (status != 0) {
      throw new CudaException(name, status, errorString(status));
    }
  }
}

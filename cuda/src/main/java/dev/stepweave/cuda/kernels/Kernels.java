package dev.stepweave.cuda.kernels;

import dev.stepweave.cuda.driver.CudaContext;
import dev.stepweave.cuda.driver.Driver;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** Our kernel files, compiled (or read from the disk cache) and loaded once per backend. */
public final class Kernels {
  private static final int ROW_THREADS = 256;

  /** Every kernel file shipped as a resource. */
  static final List<String> FILES =
      List.of(
          "copy.cu",
          "elementwise.cu",
          "norms.cu",
          "misc.cu",
          "attention.cu",
          "flash.cu",
          "lowrank.cu");

  private static final int THREADS = 256;

  private final CudaContext context;
  private final Map<String, Long> functions = new ConcurrentHashMap<>();
  private final Map<String, KernelModule> modules = new HashMap<>();
  private final Path cacheDir;

  public Kernels(CudaContext context, Path cacheDir) {
    this.context = context;
    this.cacheDir = cacheDir;
    KernelCompiler compiler = new KernelCompiler(context.arch(), cacheDir);
    for (String file : FILES) {
      modules.put(file, KernelModule.load(compiler.cubin(file)));
    }
  }

  /** Where compiled kernels (and other per-device choices, such as cuDNN plans) are kept. */
  public Path cacheDir() {
    return cacheDir;
  }

  /** A launch of kernel {@code name} from {@code file}. */
  public Launch launch(String file, String name) {
    long f = functions.computeIfAbsent(name, n -> modules.get(file).function(n));
    return new Launch(f);
  }

  /**
   * Lets kernel {@code name} of {@code file} use {@code bytes} of dynamic shared memory (beyond the
   * default 48 KiB a launch may ask for without opting in).
   */
  public void allowSharedMemory(String file, String name, int bytes) {
    long f = functions.computeIfAbsent(name, n -> modules.get(file).function(n));
    Driver.call(
        "cuFuncSetAttribute",
        () ->
            (int)
                Driver.cuFuncSetAttribute.invokeExact(
                    f, Driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes));
  }

  /** Runs a grid-stride kernel over {@code n} elements. */
  public void elementwise(Launch launch, long n) {
    long blocks = Math.min((n + THREADS - 1) / THREADS, (long) context.multiprocessors() * 32);
    launch.run(context.stream(), (int) Math.max(blocks, 1), 1, 1, THREADS, 0);
  }

  /** Runs a kernel of {@code blocks} blocks of the elementwise kernels' width. */
  public void blocks(Launch launch, int blocks) {
    launch.run(context.stream(), blocks, 1, 1, THREADS, 0);
  }

  /** Runs a one-block-per-row kernel. */
  public void rows(Launch launch, long rows, int rowLength) {
    // Many small blocks beat few wide ones: a 1024-thread block spends its time in the
    // reductions' barriers when each thread holds one or two elements.
    int threads = rowLength >= ROW_THREADS ? ROW_THREADS : Math.max(32, (rowLength + 31) / 32 * 32);
    if (rows > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(rows + " rows exceed one kernel grid");
    }
    launch.run(context.stream(), (int) rows, 1, 1, threads, 0);
  }

  public CudaContext context() {
    return context;
  }
}

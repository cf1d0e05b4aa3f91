package dev.stepweave.cuda.kernels;

import dev.stepweave.cuda.driver.CudaException;
import dev.stepweave.cuda.driver.Ffm;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;

/**
 * Compiles our CUDA C++ sources (resources under {@code dev/stepweave/cuda/kernels}) to CUBIN for
 * one architecture with NVRTC, caching the result on disk under a key of (source hash, arch,
 * options, NVRTC version), so a warm start loads binaries without compiling.
 */
public final class KernelCompiler {
  private static final String RESOURCE_DIR = "/dev/stepweave/cuda/kernels/";

  /** Prepended to every source: the shared types and helpers. */
  private static final String COMMON = "common.cuh";

  private final String arch;
  private final List<String> options;
  private final Path cacheDir;

  KernelCompiler(String arch, Path cacheDir) {
    this.arch = arch;
    // Precise division, square root and denormals: the CPU backend's F32 semantics.
    this.options = List.of("--gpu-architecture=" + arch, "--std=c++17", "-default-device");
    this.cacheDir = cacheDir;
  }

  /** The cache directory: {@code STEPWEAVE_CUDA_CACHE}, else {@code ~/.cache/stepweave/cuda}. */
  public static Path defaultCacheDir() {
    String env = System.getenv("STEPWEAVE_CUDA_CACHE");
    if (env != null && !env.isBlank()) {
      return Path.of(env);
    }
    return Path.of(System.getProperty("user.home"), ".cache", "stepweave", "cuda");
  }

  /** The full source of kernel file {@code name} (with the common header). */
  static String source(String name) {
    return resource(COMMON) + "\n" + resource(name);
  }

  private static String resource(String name) {
    try (InputStream in = KernelCompiler.class.getResourceAsStream(RESOURCE_DIR + name)) {
      if (in == null) {
        throw new IllegalStateException("kernel source " + name + " is missing from the jar");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("reading kernel source " + name, e);
    }
  }

  /** The CUBIN of kernel file {@code name}, from the cache or freshly compiled. */
  byte[] cubin(String name) {
    String src = source(name);
    String key = cacheKey(src);
    Path cached = cacheDir.resolve(name.replace(".cu", "") + "-" + arch + "-" + key + ".cubin");
    if (Files.isRegularFile(cached)) {
      try {
        return Files.readAllBytes(cached);
      } catch (IOException e) {
        // An unreadable cache entry is recompiled below.
      }
    }
    byte[] bin = compile(name, src);
    store(cached, bin);
    return bin;
  }

  private String cacheKey(String src) {
    try {
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      sha.update(src.getBytes(StandardCharsets.UTF_8));
      sha.update(String.join(" ", options).getBytes(StandardCharsets.UTF_8));
      sha.update(nvrtcVersion().getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(sha.digest(), 0, 12);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 unavailable", e);
    }
  }

  private static String nvrtcVersion() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment major = arena.allocate(ValueLayout.JAVA_INT);
      MemorySegment minor = arena.allocate(ValueLayout.JAVA_INT);
      Nvrtc.call("nvrtcVersion", () -> (int) Nvrtc.nvrtcVersion.invokeExact(major, minor));
      return major.get(ValueLayout.JAVA_INT, 0) + "." + minor.get(ValueLayout.JAVA_INT, 0);
    }
  }

  private void store(Path target, byte[] bin) {
    try {
      Files.createDirectories(cacheDir);
      Path tmp = Files.createTempFile(cacheDir, "kernel", ".tmp");
      Files.write(tmp, bin);
      Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException e) {
      // The cache is an optimisation; a read-only home only costs a recompile next time.
    }
  }

  byte[] compile(String name, String src) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment prog = arena.allocate(ValueLayout.JAVA_LONG);
      MemorySegment text = arena.allocateFrom(src);
      MemorySegment fileName = arena.allocateFrom(name);
      Nvrtc.call(
          "nvrtcCreateProgram",
          () ->
              (int)
                  Nvrtc.nvrtcCreateProgram.invokeExact(
                      prog, text, fileName, 0, MemorySegment.NULL, MemorySegment.NULL));
      long program = prog.get(ValueLayout.JAVA_LONG, 0);
      try {
        MemorySegment opts = arena.allocate(ValueLayout.ADDRESS, options.size());
        for (int i = 0; i < options.size(); i++) {
          opts.setAtIndex(ValueLayout.ADDRESS, i, arena.allocateFrom(options.get(i)));
        }
        int n = options.size();
        int status;
        try {
          status = (int) Nvrtc.nvrtcCompileProgram.invokeExact(program, n, opts);
        } catch (Throwable t) {
          throw Ffm.rethrow("nvrtcCompileProgram", t);
        }
        if (status != 0) {
          throw new CudaException(
              "nvrtcCompileProgram",
              status,
              Nvrtc.errorString(status) + " compiling " + name + ":\n" + log(arena, program));
        }
        MemorySegment size = arena.allocate(ValueLayout.JAVA_LONG);
        Nvrtc.call(
            "nvrtcGetCUBINSize", () -> (int) Nvrtc.nvrtcGetCUBINSize.invokeExact(program, size));
        MemorySegment bin = arena.allocate(size.get(ValueLayout.JAVA_LONG, 0));
        Nvrtc.call("nvrtcGetCUBIN", () -> (int) Nvrtc.nvrtcGetCUBIN.invokeExact(program, bin));
        return bin.toArray(ValueLayout.JAVA_BYTE);
      } finally {
        Nvrtc.call("nvrtcDestroyProgram", () -> (int) Nvrtc.nvrtcDestroyProgram.invokeExact(prog));
      }
    }
  }

  private static String log(Arena arena, long program) {
    MemorySegment size = arena.allocate(ValueLayout.JAVA_LONG);
    Nvrtc.call(
        "nvrtcGetProgramLogSize",
        () -> (int) Nvrtc.nvrtcGetProgramLogSize.invokeExact(program, size));
    MemorySegment text = arena.allocate(Math.max(1, size.get(ValueLayout.JAVA_LONG, 0)));
    Nvrtc.call(
        "nvrtcGetProgramLog", () -> (int) Nvrtc.nvrtcGetProgramLog.invokeExact(program, text));
    return text.getString(0);
  }
}

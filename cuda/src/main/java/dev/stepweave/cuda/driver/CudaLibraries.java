package dev.stepweave.cuda.driver;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Where the CUDA libraries are on this machine, found at run time so that building and CI never
 * need CUDA. Search order: {@code CUDA_HOME}, {@code LD_LIBRARY_PATH}, then the standard locations
 * (the NVIDIA container driver path, {@code /usr/local/cuda}, the distribution's library
 * directories). cuDNN is optional: without it the backend works and attention and convolutions use
 * our own kernels.
 *
 * @param driver {@code libcuda.so.1}
 * @param nvrtc the runtime compiler
 * @param cublasLt cuBLASLt
 * @param cudnn {@code libcudnn.so.9}, when present
 */
public record CudaLibraries(Path driver, Path nvrtc, Path cublasLt, Optional<Path> cudnn) {
  static final List<String> STANDARD_DIRS =
      List.of(
          "/usr/local/nvidia/lib64",
          "/usr/local/nvidia/lib",
          "/usr/local/cuda/lib64",
          "/usr/local/cuda/targets/x86_64-linux/lib",
          "/usr/local/cuda/targets/sbsa-linux/lib",
          "/usr/lib/x86_64-linux-gnu",
          "/usr/lib/aarch64-linux-gnu",
          "/usr/lib64",
          "/usr/lib/wsl/lib");
  private static final List<String> DRIVER = List.of("libcuda.so.1");
  private static final List<String> NVRTC =
      List.of("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so");
  private static final List<String> CUBLAS_LT =
      List.of("libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so");
  private static final List<String> CUDNN = List.of("libcudnn.so.9");
  // cuDNN 9's front library dlopens these by soname; the graph library comes first because the
  // others link against it.
  private static final List<String> CUDNN_PARTS =
      List.of(
          "libcudnn_graph.so.9",
          "libcudnn_heuristic.so.9",
          "libcudnn_engines_precompiled.so.9",
          "libcudnn_engines_runtime_compiled.so.9");
  private static final List<String> NCCL = List.of("libnccl.so.2");
  // Python installs (the nvidia-nccl wheels) keep NCCL in <site-packages>/nvidia/nccl/lib.
  private static final List<String> PYTHON_ROOTS = List.of("/usr/local/lib", "/usr/lib");

  /** The outcome of a search: the libraries, or the one-line reason they cannot be used. */
  public record Probe(Optional<CudaLibraries> libraries, String reason) {
    public boolean found() {
      return libraries.isPresent();
    }

    /** The one-line notice printed when the CPU backend runs instead. */
    public String notice() {
      return found() ? "CUDA libraries found" : "CUDA not available: " + reason;
    }
  }

  /** Searches this process's environment and the standard locations. */
  public static Probe probe() {
    return probe(System.getenv(), STANDARD_DIRS);
  }

  /** Searches {@code env}'s CUDA_HOME and LD_LIBRARY_PATH, then {@code standardDirs}. */
  public static Probe probe(Map<String, String> env, List<String> standardDirs) {
    String os = System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT);
    if (!os.contains("linux")) {
      return new Probe(
          Optional.empty(), "the CUDA backend supports Linux only (this is " + os + ")");
    }
    List<Path> dirs = searchPath(env, standardDirs);
    Optional<Path> driver = find(dirs, DRIVER);
    if (driver.isEmpty()) {
      return missing("libcuda.so.1 (the NVIDIA driver)", dirs);
    }
    Optional<Path> nvrtc = find(dirs, NVRTC);
    if (nvrtc.isEmpty()) {
      return missing("libnvrtc (CUDA toolkit)", dirs);
    }
    Optional<Path> lt = find(dirs, CUBLAS_LT);
    if (lt.isEmpty()) {
      return missing("libcublasLt (CUDA toolkit)", dirs);
    }
    Optional<Path> cudnn = find(dirs, CUDNN);
    return new Probe(
        Optional.of(new CudaLibraries(driver.get(), nvrtc.get(), lt.get(), cudnn)), "");
  }

  /** One line on cuDNN: where it is, or that it is missing and what attention does instead. */
  public String cudnnNotice() {
    return cudnn
        .map(p -> "cuDNN found: " + p)
        .orElse(
            "cuDNN not available: no libcudnn.so.9 in CUDA_HOME, LD_LIBRARY_PATH or the standard"
                + " directories; attention and convolutions use the built-in kernels");
  }

  private static Probe missing(String what, List<Path> dirs) {
    return new Probe(
        Optional.empty(),
        "no "
            + what
            + " in CUDA_HOME, LD_LIBRARY_PATH or "
            + dirs.size()
            + " standard directories (set CUDA_HOME or LD_LIBRARY_PATH)");
  }

  static List<Path> searchPath(Map<String, String> env, List<String> standardDirs) {
    LinkedHashSet<Path> dirs = new LinkedHashSet<>();
    String home = env.get("CUDA_HOME");
    if (home != null && !home.isBlank()) {
      for (String sub : List.of("lib64", "targets/x86_64-linux/lib", "lib")) {
        dirs.add(Path.of(home, sub));
      }
    }
    String ld = env.get("LD_LIBRARY_PATH");
    if (ld != null) {
      for (String d : ld.split(":")) {
        if (!d.isBlank()) {
          dirs.add(Path.of(d));
        }
      }
    }
    standardDirs.forEach(d -> dirs.add(Path.of(d)));
    return new ArrayList<>(dirs);
  }

  private static Optional<Path> find(List<Path> dirs, List<String> names) {
    for (String name : names) {
      for (Path dir : dirs) {
        Path p = dir.resolve(name);
        if (Files.isRegularFile(p)) {
          return Optional.of(p);
        }
      }
    }
    return Optional.empty();
  }

  /**
   * NCCL ({@code libnccl.so.2}), optional: searched in {@code NCCL_HOME/lib}, then where the other
   * libraries are searched, then in Python installs' {@code nvidia/nccl/lib}. Empty when absent;
   * nothing else needs it.
   */
  public static Optional<Path> nccl() {
    List<String> dirs = new ArrayList<>(STANDARD_DIRS);
    dirs.addAll(pythonNcclDirs());
    return nccl(System.getenv(), dirs);
  }

  /** NCCL in {@code env}'s NCCL_HOME, CUDA_HOME and LD_LIBRARY_PATH, then in {@code dirs}. */
  static Optional<Path> nccl(Map<String, String> env, List<String> dirs) {
    List<Path> search = new ArrayList<>();
    String home = env.get("NCCL_HOME");
    if (home != null && !home.isBlank()) {
      search.add(Path.of(home, "lib"));
    }
    search.addAll(searchPath(env, dirs));
    return find(search, NCCL);
  }

  private static List<String> pythonNcclDirs() {
    List<String> dirs = new ArrayList<>();
    for (String root : PYTHON_ROOTS) {
      try (Stream<Path> pythons = Files.list(Path.of(root))) {
        pythons
            .filter(p -> p.getFileName().toString().startsWith("python3"))
            .sorted()
            .forEach(
                p -> {
                  for (String packages : List.of("dist-packages", "site-packages")) {
                    dirs.add(p.resolve(packages).resolve("nvidia/nccl/lib").toString());
                  }
                });
      } catch (IOException e) {
        // No Python installs under this root.
      }
    }
    return dirs;
  }

  // ---- loading ---------------------------------------------------------------------------------

  private static volatile CudaLibraries loaded;

  /** Makes these libraries the ones the binding classes resolve their symbols in. */
  public void makeCurrent() {
    loaded = this;
  }

  public static CudaLibraries current() {
    CudaLibraries libs = loaded;
    if (libs == null) {
      Probe p = probe();
      libs = p.libraries().orElseThrow(() -> new IllegalStateException(p.notice()));
      loaded = libs;
    }
    return libs;
  }

  static SymbolLookup driverLookup() {
    return SymbolLookup.libraryLookup(current().driver(), Arena.global());
  }

  public static SymbolLookup nvrtcLookup() {
    Path nvrtc = current().nvrtc();
    // NVRTC dlopens its builtins library by soname; loading it first from the same directory
    // makes that work even when the directory is not on LD_LIBRARY_PATH.
    try (Stream<Path> files = Files.list(nvrtc.getParent())) {
      files
          .filter(p -> p.getFileName().toString().startsWith("libnvrtc-builtins.so"))
          .sorted()
          .forEach(p -> SymbolLookup.libraryLookup(p, Arena.global()));
    } catch (IOException | IllegalArgumentException e) {
      // Not fatal: NVRTC reports a missing builtins library itself when it compiles.
    }
    return SymbolLookup.libraryLookup(nvrtc, Arena.global());
  }

  public static SymbolLookup ncclLookup() {
    Path lib = nccl().orElseThrow(() -> new IllegalStateException("NCCL (libnccl.so.2) not found"));
    return SymbolLookup.libraryLookup(lib, Arena.global());
  }

  public static SymbolLookup cublasLtLookup() {
    return SymbolLookup.libraryLookup(current().cublasLt(), Arena.global());
  }

  public static SymbolLookup cudnnLookup() {
    Path cudnn =
        current().cudnn().orElseThrow(() -> new IllegalStateException(current().cudnnNotice()));
    // Like NVRTC's builtins: loading the parts from the same directory first lets cuDNN find them
    // by soname even when that directory is not on the loader's path.
    for (String part : CUDNN_PARTS) {
      Path p = cudnn.resolveSibling(part);
      try {
        if (Files.isRegularFile(p)) {
          SymbolLookup.libraryLookup(p, Arena.global());
        }
      } catch (IllegalArgumentException e) {
        // Not fatal: cuDNN reports a part it cannot load when it needs it.
      }
    }
    return SymbolLookup.libraryLookup(cudnn, Arena.global());
  }
}

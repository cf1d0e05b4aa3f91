package dev.stepweave.cuda.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Library discovery, without a GPU: what is searched, and the one-line notice when absent. */
class CudaLibrariesTest {

  @Test
  void withoutLibrariesTheNoticeSaysCudaIsNotAvailableAndWhy(@TempDir Path empty) {
    CudaLibraries.Probe p = CudaLibraries.probe(Map.of(), List.of(empty.toString()));
    assertFalse(p.found());
    assertTrue(p.notice().startsWith("CUDA not available: no libcuda.so.1"), p.notice());
    assertFalse(p.notice().contains("\n"), "the notice is one line");
  }

  @Test
  void aDriverWithoutTheToolkitNamesTheMissingLibrary(@TempDir Path dir) throws Exception {
    Files.createFile(dir.resolve("libcuda.so.1"));
    CudaLibraries.Probe p = CudaLibraries.probe(Map.of(), List.of(dir.toString()));
    assertFalse(p.found());
    assertTrue(p.notice().contains("libnvrtc"), p.notice());
  }

  @Test
  void cudaHomeAndLdLibraryPathAreSearchedBeforeTheStandardDirectories(@TempDir Path root)
      throws Exception {
    Path home = Files.createDirectories(root.resolve("cuda/targets/x86_64-linux/lib"));
    Path ld = Files.createDirectories(root.resolve("driver"));
    Path standard = Files.createDirectories(root.resolve("standard"));
    Files.createFile(ld.resolve("libcuda.so.1"));
    Files.createFile(home.resolve("libnvrtc.so.13"));
    Files.createFile(home.resolve("libcublasLt.so.13"));
    for (String lib : List.of("libcuda.so.1", "libnvrtc.so.12", "libcublasLt.so.12")) {
      Files.createFile(standard.resolve(lib));
    }
    CudaLibraries.Probe p =
        CudaLibraries.probe(
            Map.of("CUDA_HOME", root.resolve("cuda").toString(), "LD_LIBRARY_PATH", ld.toString()),
            List.of(standard.toString()));
    assertTrue(p.found(), p.notice());
    CudaLibraries libs = p.libraries().orElseThrow();
    assertEquals(ld.resolve("libcuda.so.1"), libs.driver());
    assertEquals(home.resolve("libnvrtc.so.13"), libs.nvrtc());
    assertEquals(home.resolve("libcublasLt.so.13"), libs.cublasLt());
  }

  @Test
  void cudnnIsFoundOnTheSearchPathButItsAbsenceIsNotFatal(@TempDir Path root) throws Exception {
    Path toolkit = Files.createDirectories(root.resolve("toolkit"));
    for (String lib : List.of("libcuda.so.1", "libnvrtc.so.13", "libcublasLt.so.13")) {
      Files.createFile(toolkit.resolve(lib));
    }
    CudaLibraries.Probe without = CudaLibraries.probe(Map.of(), List.of(toolkit.toString()));
    assertTrue(without.found(), "the backend works without cuDNN: " + without.notice());
    CudaLibraries libs = without.libraries().orElseThrow();
    assertTrue(libs.cudnn().isEmpty());
    assertTrue(
        libs.cudnnNotice().startsWith("cuDNN not available: no libcudnn.so.9"), libs.cudnnNotice());
    assertTrue(libs.cudnnNotice().endsWith("attention and convolutions use the built-in kernels"));
    assertFalse(libs.cudnnNotice().contains("\n"), "the notice is one line");

    Path pip = Files.createDirectories(root.resolve("site-packages/nvidia/cudnn/lib"));
    Files.createFile(pip.resolve("libcudnn.so.9"));
    CudaLibraries.Probe with =
        CudaLibraries.probe(Map.of("LD_LIBRARY_PATH", pip.toString()), List.of(toolkit.toString()));
    assertEquals(
        pip.resolve("libcudnn.so.9"), with.libraries().orElseThrow().cudnn().orElseThrow());
  }

  @Test
  void theStandardLocationsIncludeTheContainerDriverAndToolkitPaths() {
    assertTrue(CudaLibraries.STANDARD_DIRS.contains("/usr/local/nvidia/lib64"));
    assertTrue(CudaLibraries.STANDARD_DIRS.contains("/usr/local/cuda/targets/x86_64-linux/lib"));
    // Where the GPU machine's distribution package puts libcudnn.so.9.
    assertTrue(CudaLibraries.STANDARD_DIRS.contains("/usr/lib/x86_64-linux-gnu"));
  }
}

package dev.stepweave.cuda.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** NCCL discovery, without a GPU: optional, NCCL_HOME first, then the usual search path. */
class NcclLibraryTest {

  @Test
  void absentNcclIsEmptyAndTheOtherLibrariesAreStillFound(@TempDir Path dir) throws Exception {
    for (String lib : List.of("libcuda.so.1", "libnvrtc.so.13", "libcublasLt.so.13")) {
      Files.createFile(dir.resolve(lib));
    }
    assertEquals(Optional.empty(), CudaLibraries.nccl(Map.of(), List.of(dir.toString())));
    assertTrue(CudaLibraries.probe(Map.of(), List.of(dir.toString())).found());
  }

  @Test
  void ncclHomeIsSearchedBeforeLdLibraryPathAndTheStandardDirectories(@TempDir Path root)
      throws Exception {
    Path home = Files.createDirectories(root.resolve("nccl/lib"));
    Path ld = Files.createDirectories(root.resolve("ld"));
    Path standard = Files.createDirectories(root.resolve("standard"));
    for (Path dir : List.of(home, ld, standard)) {
      Files.createFile(dir.resolve("libnccl.so.2"));
    }
    Map<String, String> env =
        Map.of("NCCL_HOME", root.resolve("nccl").toString(), "LD_LIBRARY_PATH", ld.toString());
    assertEquals(
        Optional.of(home.resolve("libnccl.so.2")),
        CudaLibraries.nccl(env, List.of(standard.toString())));
    assertEquals(
        Optional.of(ld.resolve("libnccl.so.2")),
        CudaLibraries.nccl(Map.of("LD_LIBRARY_PATH", ld.toString()), List.of(standard.toString())));
    assertEquals(
        Optional.of(standard.resolve("libnccl.so.2")),
        CudaLibraries.nccl(Map.of(), List.of(standard.toString())));
  }
}

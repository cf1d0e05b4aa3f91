package dev.stepweave.cuda;

import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.stepweave.cuda.driver.CudaLibraries;
import org.junit.jupiter.api.Test;

/**
 * Always runs, so every build's log says that the GPU group was not part of it and why (the
 * surefire configuration excludes the "gpu" tag; scripts/device/run.sh runs it on a GPU machine).
 */
class GpuGroupNoticeTest {

  @Test
  void sayThatTheGpuGroupDidNotRunHere() {
    CudaLibraries.Probe probe = CudaLibraries.probe();
    String why = probe.found() ? "excluded from this build" : probe.notice();
    System.out.println(
        "NOTICE: GPU tests (JUnit tag \"gpu\") were not run: "
            + why
            + ". Run them on a GPU machine with scripts/device/run.sh.");
    assertFalse(why.isBlank());
  }
}

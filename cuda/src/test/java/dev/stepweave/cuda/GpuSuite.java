package dev.stepweave.cuda;

import static org.junit.platform.engine.discovery.DiscoverySelectors.selectPackage;

import java.io.PrintWriter;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.discovery.ClassNameFilter;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.TagFilter;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;
import org.junit.platform.launcher.listeners.SummaryGeneratingListener;

/**
 * Runs the "gpu" test group without Maven (the GPU machine has only a Java runtime): {@code java
 * -cp ... dev.stepweave.cuda.GpuSuite [EXCLUDED_CLASS_PATTERN ...]} (regular expressions over the
 * classes' full names, to tell which test disturbs another). Exits non-zero unless every test ran
 * and passed.
 */
public final class GpuSuite {
  private GpuSuite() {}

  public static void main(String[] args) {
    LauncherDiscoveryRequestBuilder discovery =
        LauncherDiscoveryRequestBuilder.request()
            .selectors(selectPackage("dev.stepweave.cuda"))
            .filters(TagFilter.includeTags("gpu"));
    if (args.length > 0) {
      discovery.filters(ClassNameFilter.excludeClassNamePatterns(args));
    }
    LauncherDiscoveryRequest request = discovery.build();
    Launcher launcher = LauncherFactory.create();
    SummaryGeneratingListener summary = new SummaryGeneratingListener();
    TestExecutionListener progress =
        new TestExecutionListener() {
          @Override
          public void executionStarted(TestIdentifier id) {
            if (id.isTest()) {
              System.out.println("RUN  " + id.getDisplayName());
            }
          }

          @Override
          public void executionSkipped(TestIdentifier id, String reason) {
            System.out.println("SKIP " + id.getDisplayName() + ": " + reason);
          }

          @Override
          public void executionFinished(TestIdentifier id, TestExecutionResult result) {
            if (id.isTest() || result.getStatus() != TestExecutionResult.Status.SUCCESSFUL) {
              System.out.println(
                  result.getStatus()
                      + " "
                      + id.getDisplayName()
                      + result.getThrowable().map(t -> ": " + t).orElse(""));
            }
          }
        };
    launcher.execute(request, summary, progress);
    summary.getSummary().printTo(new PrintWriter(System.out, true));
    summary.getSummary().printFailuresTo(new PrintWriter(System.out, true), 30);
    var s = summary.getSummary();
    boolean ok =
        s.getTotalFailureCount() == 0
            && s.getTestsSkippedCount() == 0
            && s.getTestsFoundCount() > 0;
    System.exit(ok ? 0 : 1);
  }
}

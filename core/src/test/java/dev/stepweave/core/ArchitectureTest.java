package dev.stepweave.core;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaMethodCall;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchRule;
import dev.stepweave.tensor.Backend;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The dependency rules inside {@code core} (DESIGN.md): the model plane describes models and must
 * not know how they are run; the runtime executes loops but defines no model math; requests,
 * caches, extensions and programs are below the engine, never above it; nothing in the engine
 * reaches for products (server, CLI) or post-training.
 *
 * <p>Every rule fails on an empty match ({@code archunit.properties}), and {@link
 * #everyCorePackageARuleNamesHoldsClasses} fails when a package named here is renamed or gone, so
 * no rule can pass by checking nothing.
 */
class ArchitectureTest {
  static final String CARD = "dev.stepweave.core.card..";
  static final String LOOP = "dev.stepweave.core.loop..";
  static final String POLICY = "dev.stepweave.core.loop.policy..";
  static final String RUNTIME = "dev.stepweave.core.runtime..";
  static final String REQUEST = "dev.stepweave.core.request..";
  static final String CACHE = "dev.stepweave.core.cache..";
  static final String EXTEND = "dev.stepweave.core.extend..";
  static final String PROGRAM = "dev.stepweave.core.program..";
  static final String PARITY = "dev.stepweave.core.parity..";
  static final String MEMORY = "dev.stepweave.core.memory..";

  /**
   * What the runtime may ask of a backend: where it runs, how much memory it has, a tensor back on
   * the host, at once or queued behind the device's work (checkpoints), whether a step's output is
   * finite (the non-finite check) and to wait for the device (to time a call), to give back cached
   * device memory once a request is done, and what a step's failure means for the pool (to rebuild
   * it or retry smaller). Every other method computes, and computing is the model's business.
   */
  static final Set<String> BACKEND_CALLS_OF_THE_RUNTIME =
      Set.of(
          "device",
          "name",
          "deviceMemory",
          "download",
          "downloadQueued",
          "isFinite",
          "isFiniteOnHost",
          "synchronize",
          "trim",
          "classify");

  private static JavaClasses core;

  @BeforeAll
  static void importCore() {
    core =
        new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("dev.stepweave.core");
  }

  private static void check(ArchRule rule) {
    rule.allowEmptyShould(false).check(core);
  }

  @Test
  void everyCorePackageARuleNamesHoldsClasses() {
    for (String pkg :
        List.of(CARD, LOOP, POLICY, RUNTIME, REQUEST, CACHE, EXTEND, PROGRAM, PARITY, MEMORY)) {
      assertTrue(
          core.stream().anyMatch(c -> c.getPackageName().startsWith(pkg.replace("..", ""))),
          pkg + " holds no class: a rule naming it checks nothing");
    }
  }

  @Test
  void cardKnowsNothingOfRuntimeOrRequests() {
    check(
        noClasses()
            .that()
            .resideInAPackage(CARD)
            .should()
            .dependOnClassesThat()
            .resideInAnyPackage(RUNTIME, REQUEST, "dev.stepweave.server..", "dev.stepweave.cli.."));
  }

  @Test
  void runtimeDefinesNoModelMath() {
    check(
        noClasses()
            .that()
            .resideInAPackage(RUNTIME)
            .should()
            .dependOnClassesThat()
            .resideInAnyPackage("dev.stepweave.models..", "dev.stepweave.tensor.cpu..", POLICY));
  }

  @Test
  void runtimeCallsNoBackendComputeMethod() {
    // The step bodies behind BatchableCall/WorkCall compute; the runtime only invokes them.
    DescribedPredicate<JavaMethodCall> compute =
        DescribedPredicate.describe(
            "a Backend method other than " + BACKEND_CALLS_OF_THE_RUNTIME,
            call ->
                call.getTargetOwner().isAssignableTo(Backend.class)
                    && !BACKEND_CALLS_OF_THE_RUNTIME.contains(call.getName()));
    check(noClasses().that().resideInAPackage(RUNTIME).should().callMethodWhere(compute));
  }

  @Test
  void loopContractDoesNotDependOnTheEngine() {
    check(
        noClasses()
            .that()
            .resideInAPackage(LOOP)
            .should()
            .dependOnClassesThat()
            .resideInAnyPackage(RUNTIME, PROGRAM, "dev.stepweave.server.."));
  }

  @Test
  void requestsAreDataBelowTheEngine() {
    // A request crosses the product boundary: it may name card types, never the machinery.
    check(
        noClasses()
            .that()
            .resideInAPackage(REQUEST)
            .should()
            .dependOnClassesThat()
            .resideInAnyPackage(RUNTIME, LOOP, EXTEND, CACHE, PROGRAM));
  }

  @Test
  void cachesKnowOnlyTheirKeysAndValues() {
    // Callers compose a CacheKey from what they know; the cache itself knows no loop or request.
    check(
        noClasses()
            .that()
            .resideInAPackage(CACHE)
            .should()
            .dependOnClassesThat()
            .resideInAnyPackage(RUNTIME, LOOP, REQUEST, EXTEND, PROGRAM));
  }

  @Test
  void extensionsDoNotDriveTheEngine() {
    // Plugins are assembled into loops and observe steps; scheduling stays the runtime's.
    check(
        noClasses()
            .that()
            .resideInAPackage(EXTEND)
            .should()
            .dependOnClassesThat()
            .resideInAnyPackage(RUNTIME, PROGRAM));
  }

  @Test
  void programsDoNotKnowTheEngineThatRunsThem() {
    check(
        noClasses()
            .that()
            .resideInAPackage(PROGRAM)
            .should()
            .dependOnClassesThat()
            .resideInAPackage(RUNTIME));
  }

  @Test
  void coreNeverReachesProductsOrTraining() {
    check(
        noClasses()
            .should()
            .dependOnClassesThat()
            .resideInAnyPackage(
                "dev.stepweave.training..",
                "dev.stepweave.server..",
                "dev.stepweave.cli..",
                "dev.stepweave.media..",
                "org.jcodec.."));
  }

  @Test
  void coreDoesNotBindToTheCudaBackend() {
    check(noClasses().should().dependOnClassesThat().resideInAPackage("dev.stepweave.cuda.."));
  }

  @Test
  void memoryAccountingKnowsNothingOfTheEngine() {
    check(
        noClasses()
            .that()
            .resideInAPackage(MEMORY)
            .should()
            .dependOnClassesThat()
            .resideInAnyPackage(
                RUNTIME,
                REQUEST,
                PROGRAM,
                EXTEND,
                "dev.stepweave.server..",
                "dev.stepweave.cli.."));
  }
}

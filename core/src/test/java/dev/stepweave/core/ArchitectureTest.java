package dev.stepweave.core;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchRule;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The dependency rules inside {@code core} (DESIGN.md): the model plane describes models and must
 * not know how they are run; the runtime executes loops but defines no model math; nothing in the
 * engine reaches for products (server, CLI) or post-training.
 */
class ArchitectureTest {
  private static JavaClasses core;

  @BeforeAll
  static void importCore() {
    core =
        new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("dev.stepweave.core");
  }

  private static void check(ArchRule rule) {
    // Packages appear as issues land; an empty rule is a rule not yet exercised, not a failure.
    rule.allowEmptyShould(true).check(core);
  }

  @Test
  void cardKnowsNothingOfRuntimeOrRequests() {
    check(
        noClasses()
            .that()
            .resideInAPackage("dev.stepweave.core.card..")
            .should()
            .dependOnClassesThat()
            .resideInAnyPackage(
                "dev.stepweave.core.runtime..",
                "dev.stepweave.core.request..",
                "dev.stepweave.server..",
                "dev.stepweave.cli.."));
  }

  @Test
  void runtimeDefinesNoModelMath() {
    check(
        noClasses()
            .that()
            .resideInAPackage("dev.stepweave.core.runtime..")
            .should()
            .dependOnClassesThat()
            .resideInAnyPackage("dev.stepweave.models..", "dev.stepweave.tensor.cpu.."));
  }

  @Test
  void loopContractDoesNotDependOnTheEngine() {
    check(
        noClasses()
            .that()
            .resideInAPackage("dev.stepweave.core.loop..")
            .should()
            .dependOnClassesThat()
            .resideInAnyPackage("dev.stepweave.core.runtime..", "dev.stepweave.server.."));
  }

  @Test
  void coreNeverReachesProductsOrTraining() {
    check(
        noClasses()
            .should()
            .dependOnClassesThat()
            .resideInAnyPackage(
                "dev.stepweave.training..", "dev.stepweave.server..", "dev.stepweave.cli.."));
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
            .resideInAPackage("dev.stepweave.core.memory..")
            .should()
            .dependOnClassesThat()
            .resideInAnyPackage(
                "dev.stepweave.core.runtime..",
                "dev.stepweave.core.request..",
                "dev.stepweave.server..",
                "dev.stepweave.cli.."));
  }
}

package dev.stepweave.cli;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The plane rules across modules (DESIGN.md), checked where every module is on the classpath. The
 * Maven module graph already forbids most of these; these rules keep a future dependency edit from
 * quietly undoing them.
 */
class ModuleArchitectureTest {
  private static JavaClasses all;

  @BeforeAll
  static void importAll() {
    all =
        new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("dev.stepweave");
  }

  @Test
  void nothingButTheCliDependsOnTraining() {
    noClasses()
        .that()
        .resideOutsideOfPackages("dev.stepweave.training..", "dev.stepweave.cli..")
        .should()
        .dependOnClassesThat()
        .resideInAPackage("dev.stepweave.training..")
        .allowEmptyShould(true)
        .check(all);
  }

  @Test
  void tensorDependsOnNothingOfOurs() {
    noClasses()
        .that()
        .resideInAPackage("dev.stepweave.tensor..")
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage(
            "dev.stepweave.core..",
            "dev.stepweave.models..",
            "dev.stepweave.cuda..",
            "dev.stepweave.server..",
            "dev.stepweave.training..",
            "dev.stepweave.cli..")
        .check(all);
  }

  @Test
  void coreAndServerKnowNoModelFamily() {
    noClasses()
        .that()
        .resideInAnyPackage("dev.stepweave.core..", "dev.stepweave.server..")
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage("dev.stepweave.models..", "dev.stepweave.cuda..")
        .check(all);
  }

  @Test
  void modelsAreBackendAgnostic() {
    // Model code computes through the Backend SPI only, so a CUDA backend runs it unchanged.
    noClasses()
        .that()
        .resideInAPackage("dev.stepweave.models..")
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage("dev.stepweave.tensor.cpu..", "dev.stepweave.cuda..")
        .check(all);
  }
}

package dev.stepweave.cli;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchRule;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The plane rules across modules (DESIGN.md), checked where every module is on the classpath. The
 * Maven module graph already forbids most of these; these rules keep a future dependency edit from
 * quietly undoing them.
 *
 * <p>Every rule fails on an empty match ({@code archunit.properties}), and {@link
 * #everyModuleARuleNamesIsOnTheClasspath} fails when a module's package is missing, so no rule can
 * pass by checking nothing.
 */
class ModuleArchitectureTest {
  static final String TENSOR = "dev.stepweave.tensor..";
  static final String CPU = "dev.stepweave.tensor.cpu..";
  static final String CUDA = "dev.stepweave.cuda..";
  static final String CORE = "dev.stepweave.core..";
  static final String MEDIA = "dev.stepweave.media..";
  static final String MODELS = "dev.stepweave.models..";
  static final String TRAINING = "dev.stepweave.training..";
  static final String AUTOGRAD = "dev.stepweave.training.autograd..";
  static final String SERVER = "dev.stepweave.server..";
  static final String CLI = "dev.stepweave.cli..";
  static final String JCODEC = "org.jcodec..";

  private static JavaClasses all;

  @BeforeAll
  static void importAll() {
    all =
        new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("dev.stepweave");
  }

  private static void check(ArchRule rule) {
    rule.allowEmptyShould(false).check(all);
  }

  @Test
  void everyModuleARuleNamesIsOnTheClasspath() {
    for (String pkg :
        List.of(TENSOR, CPU, CUDA, CORE, MEDIA, MODELS, TRAINING, AUTOGRAD, SERVER, CLI)) {
      assertTrue(
          all.stream().anyMatch(c -> c.getPackageName().startsWith(pkg.replace("..", ""))),
          pkg + " holds no class on the classpath: a rule naming it checks nothing");
    }
  }

  @Test
  void nothingButTheCliDependsOnTraining() {
    check(
        noClasses()
            .that()
            .resideOutsideOfPackages(TRAINING, CLI)
            .should()
            .dependOnClassesThat()
            .resideInAPackage(TRAINING));
  }

  @Test
  void trainingStandsOnCoreModelsAndTensorAlone() {
    // §10: the trainer is a client of the serving components, never of the products or a device.
    check(
        noClasses()
            .that()
            .resideInAPackage(TRAINING)
            .should()
            .dependOnClassesThat()
            .resideInAnyPackage(CUDA, MEDIA, SERVER, CLI));
  }

  @Test
  void autogradKnowsOnlyTheBackendSpi() {
    // Differentiation works on any model written against the Backend SPI: it knows no model.
    check(
        noClasses()
            .that()
            .resideInAPackage(AUTOGRAD)
            .should()
            .dependOnClassesThat()
            .resideInAnyPackage(CORE, MODELS, CPU, CUDA, MEDIA, SERVER, CLI));
  }

  @Test
  void tensorDependsOnNothingOfOurs() {
    check(
        noClasses()
            .that()
            .resideInAPackage(TENSOR)
            .should()
            .dependOnClassesThat()
            .resideInAnyPackage(CORE, MEDIA, MODELS, CUDA, SERVER, TRAINING, CLI));
  }

  @Test
  void coreAndServerKnowNoModelFamily() {
    check(
        noClasses()
            .that()
            .resideInAnyPackage(CORE, SERVER)
            .should()
            .dependOnClassesThat()
            .resideInAnyPackage(MODELS, CUDA));
  }

  @Test
  void modelsAreBackendAgnostic() {
    // Model code computes through the Backend SPI only, so a CUDA backend runs it unchanged.
    check(
        noClasses()
            .that()
            .resideInAPackage(MODELS)
            .should()
            .dependOnClassesThat()
            .resideInAnyPackage(CPU, CUDA));
  }

  @Test
  void onlyTheProductsWriteMedia() {
    // Files are a product concern: the engine hands out tensors, the server and CLI encode them.
    check(
        noClasses()
            .that()
            .resideOutsideOfPackages(MEDIA, SERVER, CLI)
            .should()
            .dependOnClassesThat()
            .resideInAPackage(MEDIA));
  }

  @Test
  void mediaStandsOnTensorsAlone() {
    check(
        noClasses()
            .that()
            .resideInAPackage(MEDIA)
            .should()
            .dependOnClassesThat()
            .resideInAnyPackage(CORE, MODELS, CUDA, SERVER, TRAINING, CLI));
  }

  @Test
  void onlyMediaUsesTheCodecLibrary() {
    check(
        noClasses()
            .that()
            .resideOutsideOfPackage(MEDIA)
            .should()
            .dependOnClassesThat()
            .resideInAPackage(JCODEC));
  }
}

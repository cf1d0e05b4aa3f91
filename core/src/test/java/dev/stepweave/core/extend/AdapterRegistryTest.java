package dev.stepweave.core.extend;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.AdapterUse;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.InvalidRequestException;
import dev.stepweave.core.request.Request;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The deploy-scope adapter registry: what registers under which name, what a rescan changes, and
 * the one-line error each bad file, name or request gets. The inspector stands in for a model: it
 * refuses files whose content starts with "bad".
 */
class AdapterRegistryTest {
  @TempDir Path dir;

  private static final AdapterInspector INSPECTOR =
      file -> {
        try {
          if (Files.readString(file).startsWith("bad")) {
            throw new InvalidAdapterException(file + ": key 'x' targets no known layer");
          }
        } catch (java.io.IOException e) {
          throw new InvalidAdapterException(file + ": unreadable");
        }
        return new AdapterInfo("test", 4, List.of("blocks.0.attn1.to_q"), Optional.empty());
      };

  private Path file(String name, String content) throws Exception {
    Path f = dir.resolve(name);
    Files.writeString(f, content);
    return f;
  }

  private static Request requesting(AdapterUse... uses) {
    return Request.builder(
            TaskType.T2V,
            new DiffusionParams(4, 5, 0, 32, 32, 9, 8, "", Optional.empty(), Optional.empty()))
        .prompt("p")
        .adapters(List.of(uses))
        .build();
  }

  @Test
  void aDirectoryRegistersEverySafetensorsUnderItsNameAndRescanSeesChanges() throws Exception {
    file("style.safetensors", "one");
    file("notes.txt", "ignored");
    file("x.safetensors", "two");
    Path extra =
        Files.writeString(
            Files.createDirectory(dir.resolve("elsewhere")).resolve("n.safetensors"), "n");
    AdapterRegistry r = AdapterRegistry.open(INSPECTOR, Map.of("named", extra), List.of(dir));
    assertEquals(
        List.of("named", "style", "x"), r.list().stream().map(RegisteredAdapter::name).toList());
    RegisteredAdapter style = r.get("style").orElseThrow();
    assertEquals(3, style.bytes());
    assertEquals(64, style.sha256().length());
    assertEquals(style.sha256().substring(0, 16), style.version());

    file("new.safetensors", "three");
    Files.delete(dir.resolve("x.safetensors"));
    Files.writeString(dir.resolve("style.safetensors"), "one, rewritten");
    Files.delete(extra);
    assertThrows(InvalidAdapterException.class, r::rescan, "the named file is gone");
    assertEquals(3, r.list().size(), "a refused rescan changes nothing");

    Files.writeString(extra, "n again");
    AdapterRegistry.Changes c = r.rescan();
    assertEquals(List.of("new"), c.added());
    assertEquals(List.of("x"), c.removed());
    assertEquals(List.of("named", "style"), c.changed());

    Files.delete(dir.resolve("new.safetensors"));
    assertEquals(List.of("new"), r.rescan().removed());
  }

  @Test
  void aRefusedFileStopsRegistrationAndLeavesARescanUnapplied() throws Exception {
    file("good.safetensors", "ok");
    AdapterRegistry r = AdapterRegistry.open(INSPECTOR, Map.of(), List.of(dir));
    Path bad = file("broken.safetensors", "bad");
    var e = assertThrows(InvalidAdapterException.class, r::rescan);
    assertEquals(bad + ": key 'x' targets no known layer", e.getMessage());
    assertEquals(List.of("good"), r.list().stream().map(RegisteredAdapter::name).toList());
    var open =
        assertThrows(
            InvalidAdapterException.class,
            () -> AdapterRegistry.open(INSPECTOR, Map.of(), List.of(dir)));
    assertEquals(bad + ": key 'x' targets no known layer", open.getMessage());
  }

  @Test
  void badNamesFilesAndDirectoriesAreOneLineErrors() throws Exception {
    Path good = file("a.safetensors", "ok");
    Path pickle = file("a.pt", "ok");
    assertEquals(
        pickle + ": adapters must be .safetensors files (no pickle)",
        assertThrows(
                InvalidAdapterException.class,
                () -> AdapterRegistry.open(INSPECTOR, Map.of("p", pickle), List.of()))
            .getMessage());
    assertEquals(
        "adapter file not found: " + dir.resolve("gone.safetensors"),
        assertThrows(
                InvalidAdapterException.class,
                () ->
                    AdapterRegistry.open(
                        INSPECTOR, Map.of("g", dir.resolve("gone.safetensors")), List.of()))
            .getMessage());
    assertEquals(
        good + ": adapter name '../up' must be letters, digits, '.', '_' or '-'",
        assertThrows(
                InvalidAdapterException.class,
                () -> AdapterRegistry.open(INSPECTOR, Map.of("../up", good), List.of()))
            .getMessage());
    Path other = Files.createDirectory(dir.resolve("other"));
    Path twin = Files.writeString(other.resolve("a.safetensors"), "ok");
    assertEquals(
        "two adapters named 'a': " + good + " and " + twin,
        assertThrows(
                InvalidAdapterException.class,
                () -> AdapterRegistry.open(INSPECTOR, Map.of(), List.of(dir, other)))
            .getMessage());
    assertEquals(
        "adapter directory not found: " + dir.resolve("none"),
        assertThrows(
                InvalidAdapterException.class,
                () -> AdapterRegistry.open(INSPECTOR, Map.of(), List.of(dir.resolve("none"))))
            .getMessage());
  }

  @Test
  void requestsResolveOnlyRegisteredNamesInTheirOrder() throws Exception {
    AdapterRegistry r =
        AdapterRegistry.open(
            INSPECTOR,
            Map.of("a", file("a.safetensors", "1"), "b", file("b.safetensors", "2")),
            List.of());
    List<ResolvedAdapter> got =
        r.resolve(requesting(new AdapterUse("b", 0.5), new AdapterUse("a", -1)));
    assertEquals(List.of("b", "a"), got.stream().map(ResolvedAdapter::name).toList());
    assertEquals(0.5, got.get(0).scale());
    var e =
        assertThrows(
            InvalidRequestException.class,
            () -> r.resolve(requesting(new AdapterUse("a", 1), new AdapterUse("zz", 1))));
    assertEquals(Optional.of("loras[1].name"), e.field());
    assertEquals("unknown adapter 'zz' (registered: a, b)", e.getMessage());
    var none =
        assertThrows(
            InvalidRequestException.class,
            () -> AdapterRegistry.NONE.resolve(requesting(new AdapterUse("a", 1))));
    assertEquals("unknown adapter 'a' (registered: none)", none.getMessage());
  }

  @Test
  void aRecipeBesideTheFileIsItsRecipe() throws Exception {
    file("fast.safetensors", "1");
    file("fast.recipe.json", "{\"method\": \"distill\", \"sampler\": \"euler\", \"steps\": 4}");
    AdapterRegistry r = AdapterRegistry.open(INSPECTOR, Map.of(), List.of(dir));
    AdapterRecipe recipe = r.get("fast").orElseThrow().info().recipe().orElseThrow();
    assertEquals(new AdapterRecipe("distill", "euler", 4, null, null), recipe);
    assertEquals(
        List.of("sampler unipc (recipe assumes euler)", "steps 50 (recipe assumes 4)"),
        recipe.mismatches("unipc", 50, 5.0, 3.0).stream().map(Object::toString).toList());
    assertTrue(recipe.mismatches("euler", 4, 5.0, 3.0).isEmpty());
    file("fast.recipe.json", "{\"method\": \"distill\", \"steps\": \"four\"}");
    var e = assertThrows(InvalidAdapterException.class, r::rescan);
    assertEquals(
        dir.resolve("fast.recipe.json") + ": recipe field 'steps' must be a positive integer",
        e.getMessage());
  }
}

package dev.stepweave.core.extend;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.AdapterUse;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.InvalidRequestException;
import dev.stepweave.core.request.Request;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** What each bad adapter list of a request gets: a one-line error naming the field. */
class AdapterUseValidationTest {
  private static Request with(List<AdapterUse> uses) {
    return Request.builder(
            TaskType.T2V,
            new DiffusionParams(4, 5, 0, 32, 32, 9, 8, "", Optional.empty(), Optional.empty()))
        .prompt("p")
        .adapters(uses)
        .build();
  }

  private static void refused(List<AdapterUse> uses, String field, String message) {
    var e = assertThrows(InvalidRequestException.class, () -> with(uses).validate());
    assertEquals(Optional.of(field), e.field());
    assertEquals(message, e.getMessage());
  }

  @Test
  void eachBadListNamesItsField() {
    List<AdapterUse> nine = new ArrayList<>();
    for (int i = 0; i < 9; i++) {
      nine.add(new AdapterUse("a" + i, 1));
    }
    refused(nine, "loras", "at most 8 adapters per request, got 9");
    refused(
        List.of(new AdapterUse("a", 1), new AdapterUse("a", 0.5)),
        "loras[1].name",
        "adapter 'a' is named twice");
    refused(
        List.of(new AdapterUse("a", 4.5)),
        "loras[0].scale",
        "adapter 'a' scale must be a number in [-4.0, 4.0], got 4.5");
    refused(
        List.of(new AdapterUse("a", Double.NaN)),
        "loras[0].scale",
        "adapter 'a' scale must be a number in [-4.0, 4.0], got NaN");
    refused(List.of(new AdapterUse(" ", 1)), "loras[0].name", "adapter name is empty");
  }

  @Test
  void eightAdaptersAtTheLimitsAreFine() {
    List<AdapterUse> eight = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      eight.add(new AdapterUse("a" + i, i % 2 == 0 ? 4.0 : -4.0));
    }
    assertEquals(eight, with(eight).validate().adapters());
    assertEquals(eight, with(eight).toBuilder().build().adapters(), "the builder keeps them");
  }
}

package dev.stepweave.core.card;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ParallelismContractTest {
  private final ParallelismContract spread = new ParallelismContract(Set.of("sequence", "cfg"), 4);

  @Test
  void plansWithinTheContractPass() {
    assertEquals(List.of(), ParallelismContract.single().problems(ParallelismContract.SINGLE));
    assertEquals(List.of(), spread.problems("sequence=4,cfg=2"));
    // A degree-one axis is a trivial group: even a single-device card runs it.
    assertEquals(List.of(), ParallelismContract.single().problems("sequence=1"));
    assertDoesNotThrow(() -> spread.check("cfg=2", "m"));
  }

  @Test
  void aPlanTheCardDoesNotAllowIsATypedOneLineError() {
    var e =
        assertThrows(
            InvalidCardException.class,
            () -> ParallelismContract.single().check("sequence=2", "wan-tiny"));
    assertEquals(
        "wan-tiny: parallel plan 'sequence=2' spreads over axis 'sequence', which the card does"
            + " not support (the card allows axes [], sequence up to 1)",
        e.getMessage());
    assertEquals(CardProblem.Code.UNSUPPORTED_PARALLEL_PLAN, e.problems().getFirst().code());
  }

  @Test
  void degreesPastTheContractAndMalformedPlansAreProblems() {
    assertEquals(1, spread.problems("sequence=8").size());
    assertEquals(1, spread.problems("cfg=3").size());
    assertEquals(1, spread.problems("cfg=2,cfg=2").size());
    assertEquals(1, spread.problems("sequence").size());
    assertEquals(1, spread.problems("sequence=0").size());
  }
}

package dev.stepweave.core.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Reservations held against a pool's budget. */
class ReservationLedgerTest {
  @Test
  void theLedgerSumsWhatIsHeldLessWhatWouldBeReleased() {
    ReservationLedger ledger = new ReservationLedger();
    assertTrue(ledger.hold(new Reservation("a", 600, 10, 1)));
    assertTrue(ledger.hold(new Reservation("s", 300, 10.5, 2)));
    assertFalse(ledger.hold(new Reservation("a", 1, 1, 1))); // one per request
    assertEquals(new Usage(2, 900, 20.5, 3), ledger.usage(List.of()));
    assertEquals(new Usage(1, 300, 10.5, 2), ledger.usage(List.of("a")));
    ledger.release("a");
    assertFalse(ledger.holds("a"));
    assertTrue(ledger.holds("s"));
    assertEquals(new Usage(1, 300, 10.5, 2), ledger.usage(List.of()));
  }

  @Test
  void aBudgetFitsWhatIsLeftAndNamesWhatCanNeverFit() {
    PoolBudget budget = new PoolBudget(1000, 100, 4);
    Usage used = new Usage(2, 900, 20, 2);
    assertTrue(budget.fits(new Reservation("t", 100, 80, 2), used));
    assertFalse(budget.fits(new Reservation("t", 101, 80, 2), used));
    assertFalse(budget.fits(new Reservation("t", 100, 81, 2), used));
    assertFalse(budget.fits(new Reservation("t", 100, 80, 3), used));
    assertEquals(Optional.empty(), budget.exceededBy(new Reservation("z", 1000, 100, 4)));
    assertEquals(
        Optional.of("needs 1001 bytes of device memory, the pool has 1000"),
        budget.exceededBy(new Reservation("z", 1001, 0, 0)));
    assertEquals(
        Optional.of("needs 101 predicted device-ms, the pool's compute budget is 100"),
        budget.exceededBy(new Reservation("z", 0, 101, 0)));
    assertEquals(
        Optional.of("needs 5 cache blocks, the pool has 4"),
        budget.exceededBy(new Reservation("z", 0, 0, 5)));
  }

  @Test
  void anUnlimitedBudgetFitsAnything() {
    PoolBudget unlimited = new PoolBudget(Long.MAX_VALUE, Double.MAX_VALUE, Integer.MAX_VALUE);
    Usage used = new Usage(1, 1L << 40, 1e9, 1000);
    assertTrue(unlimited.fits(new Reservation("t", 1L << 40, 1e9, 1000), used));
  }
}

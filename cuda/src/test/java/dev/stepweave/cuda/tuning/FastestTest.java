package dev.stepweave.cuda.tuning;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.cuda.driver.CudaException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * How a measurement picks among candidates, without a GPU: the fastest by its best run wins, a
 * candidate whose run fails is passed over, and ties keep the library's order.
 */
class FastestTest {
  @Test
  void theFastestCandidateWinsByItsBestRun() {
    // "b"'s first run is slow (lazy loading), its second the fastest of all.
    Map<String, float[]> runs =
        Map.of(
            "a", new float[] {2f, 2f}, "b", new float[] {9f, 1.5f}, "c", new float[] {1.75f, 3f});
    Map<String, Integer> calls = new HashMap<>();
    Fastest.Timed<String> t =
        Fastest.of(
            List.of("a", "b", "c"),
            2,
            c -> runs.get(c)[calls.merge(c, 1, Integer::sum) - 1],
            c -> "engine " + c);
    assertEquals("b", t.choice());
    assertEquals(1.5f, t.ms());
    assertEquals(List.of("engine a 2.000 ms", "engine b 1.500 ms", "engine c 1.750 ms"), t.times());
    assertEquals(2, calls.get("a"));
  }

  @Test
  void tiesKeepTheLibrarysOrderAndFailingCandidatesArePassedOver() {
    Fastest.Timed<String> t =
        Fastest.of(
            List.of("a", "b", "c"),
            1,
            c -> {
              if (c.equals("a")) {
                throw new CudaException("cublasLtMatmul", 15, "not supported");
              }
              return 1f;
            },
            c -> "algo " + c);
    assertEquals("b", t.choice());
    assertEquals(3, t.times().size());
    assertTrue(t.times().getFirst().startsWith("algo a failed: "), t.times().getFirst());
    assertNull(
        Fastest.of(
            List.of("a"),
            2,
            c -> {
              throw new CudaException("cublasLtMatmul", 15, "not supported");
            },
            c -> c));
  }

  @Test
  void withinTheSlackTheCheapestWinsAndOutsideItSpeedDoes() {
    Map<String, Float> ms = Map.of("big", 1.00f, "small", 1.009f, "tiny", 1.2f);
    Map<String, Long> workspace = Map.of("big", 1536L, "small", 128L, "tiny", 0L);
    Fastest.Timed<String> t =
        Fastest.of(List.of("big", "small", "tiny"), 1, ms::get, c -> c, workspace::get, 0.01f);
    // "tiny" needs no workspace but is 20 % slower; "small" is within 1 % for a twelfth of it.
    assertEquals("small", t.choice());
    assertEquals(1.009f, t.ms());
    assertEquals(
        "big",
        Fastest.of(List.of("big", "small", "tiny"), 1, ms::get, c -> c, workspace::get, 0.005f)
            .choice());
  }
}

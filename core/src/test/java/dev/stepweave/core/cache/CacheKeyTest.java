package dev.stepweave.core.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.RecordComponent;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Every field of the key is semantic: changing any one of them misses; equal inputs hit. */
class CacheKeyTest {
  static CacheKey key() {
    return CacheKey.builder("wan", "text_encoder")
        .loop("text_encode")
        .weightsVersion("3")
        .adapters(Map.of("te-lora", "v1"))
        .precision("f32")
        .parallelPlan("single")
        .shape("1x16")
        .layout("contiguous")
        .scheduler("unipc")
        .guidance("classic:5.0")
        .seed(42)
        .inputs(Map.of("input_ids", "abc"))
        .step(3)
        .contract("1")
        .build();
  }

  /** The key with one component replaced by a different value of its type. */
  static CacheKey changed(CacheKey k, RecordComponent changedField) throws Exception {
    RecordComponent[] cs = CacheKey.class.getRecordComponents();
    Object[] args = new Object[cs.length];
    Class<?>[] types = new Class<?>[cs.length];
    for (int i = 0; i < cs.length; i++) {
      types[i] = cs[i].getType();
      args[i] = cs[i].getAccessor().invoke(k);
      if (cs[i].getName().equals(changedField.getName())) {
        args[i] =
            switch (args[i]) {
              case String s -> s + "'";
              case Long l -> l + 1;
              case Integer n -> n + 1;
              case Map<?, ?> m -> {
                Map<Object, Object> more = new HashMap<>(m);
                more.put("extra", "x");
                yield more;
              }
              default -> throw new AssertionError("unhandled field type " + cs[i]);
            };
      }
    }
    return CacheKey.class.getDeclaredConstructor(types).newInstance(args);
  }

  @Test
  void changingAnyFieldChangesTheKeyAndMisses() throws Exception {
    for (RecordComponent c : CacheKey.class.getRecordComponents()) {
      FeatureCache<String> cache = new FeatureCache<>(1 << 20, EvictionPolicy.FIFO, String::length);
      cache.acquire(key(), () -> "value").close();
      CacheKey other = changed(key(), c);
      assertNotEquals(key(), other, c.getName());
      try (var lease = cache.acquire(other, () -> "other")) {
        assertFalse(lease.hit(), "changing " + c.getName() + " must miss");
        assertEquals("other", lease.value());
      }
    }
  }

  @Test
  void equalInputsHit() {
    FeatureCache<String> cache = new FeatureCache<>(1 << 20, EvictionPolicy.FIFO, String::length);
    cache.acquire(key(), () -> "value").close();
    try (var lease = cache.acquire(key(), () -> "recomputed")) {
      assertTrue(lease.hit());
      assertEquals("value", lease.value());
    }
    assertEquals(key(), key());
    assertEquals(key().hashCode(), key().hashCode());
  }

  @Test
  void mapFieldsCompareByContentNotOrder() {
    Map<String, String> a = new HashMap<>();
    a.put("x", "1");
    a.put("y", "2");
    CacheKey one = CacheKey.builder("m", "c").adapters(a).build();
    CacheKey two = CacheKey.builder("m", "c").adapters(Map.of("y", "2", "x", "1")).build();
    assertEquals(one, two);
  }
}

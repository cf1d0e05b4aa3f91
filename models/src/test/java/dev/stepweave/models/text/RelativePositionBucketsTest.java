package dev.stepweave.models.text;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class RelativePositionBucketsTest {
  // UMT5's settings: 32 buckets (16 per direction, 8 of them exact), log-spaced up to 128.
  private final RelativePositionBuckets buckets = new RelativePositionBuckets(32, 128);

  @Test
  void smallDistancesHaveOneBucketEachPerDirection() {
    assertEquals(0, buckets.bucket(0));
    assertEquals(1, buckets.bucket(-1));
    assertEquals(7, buckets.bucket(-7));
    assertEquals(17, buckets.bucket(1));
    assertEquals(23, buckets.bucket(7));
  }

  @Test
  void largerDistancesShareLogSpacedBuckets() {
    // 8 + floor(8 * log(d/8) / log(16))
    assertEquals(8, buckets.bucket(-8));
    assertEquals(8, buckets.bucket(-11)); // 8·log(11/8)/log 16 = 0.92
    assertEquals(9, buckets.bucket(-12)); // 1.17
    assertEquals(10, buckets.bucket(-16)); // exactly 2: a boundary that float rounding could move
    assertEquals(12, buckets.bucket(-32));
    assertEquals(15, buckets.bucket(-127));
    assertEquals(26, buckets.bucket(16));
  }

  @Test
  void distancesFromMaxDistanceOnShareTheLastBucket() {
    assertEquals(15, buckets.bucket(-128));
    assertEquals(15, buckets.bucket(-5000));
    assertEquals(31, buckets.bucket(128));
    assertEquals(31, buckets.bucket(5000));
  }

  @Test
  void tableHoldsTheBucketOfKeyMinusQuery() {
    assertArrayEquals(new long[] {0, 17, 18, 1, 0, 17, 2, 1, 0}, buckets.table(3, 3).toLongArray());
  }
}

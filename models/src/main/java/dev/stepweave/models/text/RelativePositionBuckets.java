package dev.stepweave.models.text;

import dev.stepweave.tensor.Tensor;

/**
 * T5's bidirectional relative-position bucketing for an encoder: half the buckets for keys after
 * the query, half for keys before it; within a half, small distances get a bucket each and larger
 * ones share log-spaced buckets up to {@code maxDistance}, beyond which all fall in the last.
 */
record RelativePositionBuckets(int numBuckets, int maxDistance) {

  RelativePositionBuckets {
    if (numBuckets < 4 || numBuckets % 2 != 0) {
      throw new IllegalArgumentException(
          "relative_attention_num_buckets must be even and at least 4, got " + numBuckets);
    }
  }

  /** The bucket of {@code relative = keyPosition - queryPosition}. */
  int bucket(int relative) {
    int half = numBuckets / 2;
    int base = relative > 0 ? half : 0;
    int distance = Math.abs(relative);
    int exact = half / 2;
    if (distance < exact) {
      return base + distance;
    }
    // Float arithmetic step by step as the reference computes it in float32, so that distances
    // near a bucket boundary truncate to the same bucket.
    float ratio = (float) distance / exact;
    float logRatio = (float) Math.log(ratio) / (float) Math.log((double) maxDistance / exact);
    int large = exact + (int) (logRatio * (half - exact));
    return base + Math.min(large, half - 1);
  }

  /** Bucket ids {@code [queryLength, keyLength]} (I64) for every query/key pair. */
  Tensor table(int queryLength, int keyLength) {
    long[] ids = new long[queryLength * keyLength];
    for (int q = 0; q < queryLength; q++) {
      for (int k = 0; k < keyLength; k++) {
        ids[q * keyLength + k] = bucket(k - q);
      }
    }
    return Tensor.ofLongs(ids, queryLength, keyLength);
  }
}

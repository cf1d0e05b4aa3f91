package dev.stepweave.core.cache;

import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * What a cached value was computed from: every field that can change the value's meaning. Two keys
 * are equal only when reuse is safe; incorrect reuse is worse than no reuse, so when in doubt a
 * field belongs here. Optional fields are null when they do not apply to the cache (a text
 * embedding has no seed or step index).
 *
 * @param modelId the card's model id
 * @param componentId the component that computed the value ("text_encoder")
 * @param loopId the loop that computed it, or null
 * @param weightsVersion the weights the component ran with; a bump invalidates
 * @param adapterVersions adapter id → version applied to the component; partitions the cache
 * @param precision the compute precision ("f32", "bf16")
 * @param parallelPlanHash the parallel plan the value was computed under
 * @param shapeSig the input shape (e.g. the padded text length)
 * @param layoutSig the memory layout of the value
 * @param schedulerSig the sampler and its settings, or null
 * @param guidanceSig the guidance policy and scale, or null
 * @param seed the seed, or null
 * @param inputHashes input name → content hash (token ids, images)
 * @param stepIndex the loop step, or null
 * @param contractVersion the version of the component's computation contract
 */
public record CacheKey(
    String modelId,
    String componentId,
    String loopId,
    String weightsVersion,
    Map<String, String> adapterVersions,
    String precision,
    String parallelPlanHash,
    String shapeSig,
    String layoutSig,
    String schedulerSig,
    String guidanceSig,
    Long seed,
    Map<String, String> inputHashes,
    Integer stepIndex,
    String contractVersion) {

  public CacheKey {
    Objects.requireNonNull(modelId, "modelId");
    Objects.requireNonNull(componentId, "componentId");
    Objects.requireNonNull(weightsVersion, "weightsVersion");
    Objects.requireNonNull(precision, "precision");
    Objects.requireNonNull(parallelPlanHash, "parallelPlanHash");
    Objects.requireNonNull(shapeSig, "shapeSig");
    Objects.requireNonNull(layoutSig, "layoutSig");
    Objects.requireNonNull(contractVersion, "contractVersion");
    // Sorted copies: equal contents give equal keys and a stable printed form.
    adapterVersions = Map.copyOf(new TreeMap<>(adapterVersions));
    inputHashes = Map.copyOf(new TreeMap<>(inputHashes));
  }

  /** The component whose weights this key depends on, across weight versions. */
  public String lineage() {
    return modelId + "/" + componentId;
  }

  public static Builder builder(String modelId, String componentId) {
    return new Builder(modelId, componentId);
  }

  /**
   * Builds a key field by field, each named at the call site (fifteen positional fields, most of
   * them strings, would be easy to swap unnoticed); fields not set default to "not applicable".
   */
  public static final class Builder {
    private final String modelId;
    private final String componentId;
    private String loopId;
    private String weightsVersion = "0";
    private Map<String, String> adapterVersions = Map.of();
    private String precision = "f32";
    private String parallelPlanHash = "single";
    private String shapeSig = "";
    private String layoutSig = "contiguous";
    private String schedulerSig;
    private String guidanceSig;
    private Long seed;
    private Map<String, String> inputHashes = Map.of();
    private Integer stepIndex;
    private String contractVersion = "1";

    private Builder(String modelId, String componentId) {
      this.modelId = modelId;
      this.componentId = componentId;
    }

    public Builder loop(String v) {
      loopId = v;
      return this;
    }

    public Builder weightsVersion(String v) {
      weightsVersion = v;
      return this;
    }

    public Builder adapters(Map<String, String> v) {
      adapterVersions = v;
      return this;
    }

    public Builder precision(String v) {
      precision = v;
      return this;
    }

    public Builder parallelPlan(String v) {
      parallelPlanHash = v;
      return this;
    }

    public Builder shape(String v) {
      shapeSig = v;
      return this;
    }

    public Builder layout(String v) {
      layoutSig = v;
      return this;
    }

    public Builder scheduler(String v) {
      schedulerSig = v;
      return this;
    }

    public Builder guidance(String v) {
      guidanceSig = v;
      return this;
    }

    public Builder seed(long v) {
      seed = v;
      return this;
    }

    public Builder inputs(Map<String, String> v) {
      inputHashes = v;
      return this;
    }

    public Builder step(int v) {
      stepIndex = v;
      return this;
    }

    public Builder contract(String v) {
      contractVersion = v;
      return this;
    }

    public CacheKey build() {
      return new CacheKey(
          modelId,
          componentId,
          loopId,
          weightsVersion,
          adapterVersions,
          precision,
          parallelPlanHash,
          shapeSig,
          layoutSig,
          schedulerSig,
          guidanceSig,
          seed,
          inputHashes,
          stepIndex,
          contractVersion);
    }
  }
}

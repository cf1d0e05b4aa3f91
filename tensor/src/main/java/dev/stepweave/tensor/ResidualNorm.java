package dev.stepweave.tensor;

/**
 * The residual stream after an update and its normalisation for the next sub-layer, as one fused
 * operation returns them ({@link Backend#residualLayerNorm}).
 *
 * @param residual the updated stream
 * @param normed its (modulated) LayerNorm
 */
public record ResidualNorm(Tensor residual, Tensor normed) {}

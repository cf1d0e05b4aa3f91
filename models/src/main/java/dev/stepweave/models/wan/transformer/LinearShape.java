package dev.stepweave.models.wan.transformer;

/** The input and output widths of a linear layer an adapter may target. */
public record LinearShape(int in, int out) {}

package dev.stepweave.core.loop;

/** What a loop wants next: more work, or nothing. */
public sealed interface Step permits WorkPlan, Done {}

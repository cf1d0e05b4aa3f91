package dev.stepweave.core.extend;

import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.loop.ShapeSignature;

/**
 * Which step an observer is looking at.
 *
 * @param requestId the request
 * @param loopId the loop
 * @param stepIndex the loop step (0-based)
 * @param kind the work unit's kind
 * @param shape the work unit's shape signature (the cost model's key)
 */
public record StepInfo(
    String requestId, String loopId, int stepIndex, WorkKind kind, ShapeSignature shape) {}

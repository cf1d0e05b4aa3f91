package dev.stepweave.core.extend;

import dev.stepweave.core.card.WorkKind;
import dev.stepweave.core.loop.ResourceRequest;
import dev.stepweave.core.loop.ShapeSignature;
import dev.stepweave.tensor.Precision;

/**
 * One call the scheduler ran: one work unit, or a batch of work units of one kind and shape that
 * shared a device call. This is what a cost model predicts, so it is what calibrates one.
 *
 * @param modelId the card's model id
 * @param kind the units' kind
 * @param shape the units' shape signature
 * @param precision the pool's compute precision
 * @param batchSize how many work units shared the call
 * @param unit the first unit's resource request (its static estimate)
 */
public record CallInfo(
    String modelId,
    WorkKind kind,
    ShapeSignature shape,
    Precision precision,
    int batchSize,
    ResourceRequest unit) {}

package dev.stepweave.core.loop;

import dev.stepweave.tensor.Tensor;
import java.util.Map;

/**
 * A loop state as data: its tensors (stored as safetensors) and its small fields as a JSON object
 * string. Resuming from it must give bit-identical results. A loop hands over the tensors it holds,
 * on its device; checkpoints the runtime keeps or writes hold host copies in the same dtypes.
 *
 * @param loopId the loop whose state this is
 * @param tensors named tensors, on the loop's device or (in a checkpoint) on the host
 * @param json the scalar fields, a JSON object
 */
public record SerializedState(String loopId, Map<String, Tensor> tensors, String json) {
  public SerializedState {
    tensors = Map.copyOf(tensors);
  }
}

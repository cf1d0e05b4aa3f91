package dev.stepweave.cuda.cudnn;

import java.util.ArrayList;
import java.util.List;

/**
 * The owner of a set of cuDNN descriptors (one graph and its plan): creates them and destroys them
 * all, newest first, when closed, like an arena. A plan keeps its graph's descriptors alive because
 * the C API does not promise that a finalized plan no longer refers to them.
 */
final class CudnnDescriptors implements AutoCloseable {
  private final CudnnGraphApi api;
  private final List<CudnnDescriptor> owned = new ArrayList<>();

  CudnnDescriptors(CudnnGraphApi api) {
    this.api = api;
  }

  /** A new descriptor of {@code descriptorType} ({@code cudnnBackendDescriptorType_t}). */
  CudnnDescriptor create(int descriptorType) {
    CudnnDescriptor d = new CudnnDescriptor(api, api.create(descriptorType));
    owned.add(d);
    return d;
  }

  @Override
  public void close() {
    for (int i = owned.size() - 1; i >= 0; i--) {
      api.destroy(owned.get(i).handle());
    }
    owned.clear();
  }
}

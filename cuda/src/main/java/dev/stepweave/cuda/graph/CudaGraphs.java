package dev.stepweave.cuda.graph;

import dev.stepweave.cuda.memory.DeviceAllocator;
import dev.stepweave.cuda.memory.DeviceTensors;
import dev.stepweave.tensor.GraphKey;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * A backend's recorded graphs by key (see {@link dev.stepweave.cuda.CudaBackend#replayable}): the
 * first call for a key runs the body eagerly as a warm-up (kernels compiled and loaded, GEMM plans
 * made, lazily made constants created outside the recording) and then records it; later calls
 * replay. At most {@code capacity} graphs are held, the least recently used freed first; capacity 0
 * runs every body eagerly.
 */
public final class CudaGraphs {
  static final int DEFAULT_CAPACITY = 4;

  private final DeviceTensors tensors;
  private final DeviceAllocator allocator;
  private final LinkedHashMap<GraphKey, CudaGraph> graphs = new LinkedHashMap<>(16, 0.75f, true);
  private int capacity = DEFAULT_CAPACITY;
  private boolean recording;
  private long replays;
  private long recordings;
  private long evictions;

  public CudaGraphs(DeviceTensors tensors, DeviceAllocator allocator) {
    this.tensors = tensors;
    this.allocator = allocator;
  }

  public Tensor run(GraphKey key, List<Tensor> inputs, Function<List<Tensor>, Tensor> body) {
    key.requireDescribes(inputs);
    if (recording || capacity == 0) {
      // Inside another recording the body is part of that graph.
      return body.apply(inputs);
    }
    CudaGraph graph = graphs.get(key);
    if (graph != null) {
      replays++;
      return graph.replay(inputs);
    }
    Tensor warmUp = body.apply(inputs);
    while (graphs.size() >= capacity) {
      evictEldest();
    }
    recording = true;
    try {
      graph = CudaGraph.record(tensors, allocator, key, inputs, body);
    } finally {
      recording = false;
    }
    graphs.put(key, graph);
    recordings++;
    return warmUp;
  }

  private void evictEldest() {
    Iterator<Map.Entry<GraphKey, CudaGraph>> eldest = graphs.entrySet().iterator();
    CudaGraph graph = eldest.next().getValue();
    eldest.remove();
    graph.close();
    evictions++;
  }

  /** Keeps at most {@code n} graphs from now on (freeing the least recently used beyond it). */
  public void capacity(int n) {
    if (n < 0) {
      throw new IllegalArgumentException("graph capacity must be >= 0, got " + n);
    }
    capacity = n;
    while (graphs.size() > n) {
      evictEldest();
    }
  }

  public GraphStats stats() {
    long bytes = 0;
    for (CudaGraph g : graphs.values()) {
      bytes += g.poolBytes();
    }
    return new GraphStats(graphs.size(), replays, recordings, evictions, bytes);
  }

  /** Frees every graph (not counted as evictions). */
  public void clear() {
    List<CudaGraph> all = new ArrayList<>(graphs.values());
    graphs.clear();
    all.forEach(CudaGraph::close);
  }
}

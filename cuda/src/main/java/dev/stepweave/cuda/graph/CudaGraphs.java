package dev.stepweave.cuda.graph;

import dev.stepweave.cuda.memory.DeviceAllocator;
import dev.stepweave.cuda.memory.DeviceTensors;
import dev.stepweave.tensor.GraphKey;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.HashMap;
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
 *
 * <p>A graph saves the host's issuing of each kernel, which matters only while the GPU waits for
 * it. So a key's first replay is timed, and one that takes at least {@value #COMPARED_FROM_MS} ms
 * is compared once with an eager run of the next call (also timed; both are bit-identical): when
 * the eager run is faster, the graph is freed and the key runs eagerly from then on ({@link
 * #comparisons} says what was measured).
 */
public final class CudaGraphs {
  static final int DEFAULT_CAPACITY = 4;

  /** Replays shorter than this keep their graph untested: launch overhead is a large share. */
  static final float COMPARED_FROM_MS = 50f;

  /** Keys decided by measurement kept at most; the oldest decisions are forgotten first. */
  private static final int DECISIONS_KEPT = 64;

  /** Where a key stands in the replay-against-eager comparison. */
  private sealed interface Decision {}

  /** Its first replay took {@code replayMs}: the next call runs eagerly, timed. */
  private record EagerTrial(float replayMs) implements Decision {}

  /** Decided: the graph stays (it was short, or faster). */
  private record KeepGraph() implements Decision {}

  /** Decided: eager runs are faster; the graph was freed. */
  private record RunEagerly() implements Decision {}

  private final DeviceTensors tensors;
  private final DeviceAllocator allocator;
  private final LinkedHashMap<GraphKey, CudaGraph> graphs = new LinkedHashMap<>(16, 0.75f, true);
  private int capacity = DEFAULT_CAPACITY;
  private boolean recording;
  private long replays;
  private long recordings;
  private long evictions;
  private final Map<GraphKey, Decision> decisions =
      new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<GraphKey, Decision> eldest) {
          return size() > DECISIONS_KEPT;
        }
      };
  private final Map<GraphKey, String> comparisons = new HashMap<>();

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
    Decision decision = decisions.get(key);
    if (decision instanceof RunEagerly) {
      return body.apply(inputs);
    }
    if (decision instanceof EagerTrial trial) {
      return eagerTrial(key, trial, inputs, body);
    }
    CudaGraph recorded = graphs.get(key);
    if (recorded != null) {
      replays++;
      if (decision != null) {
        return recorded.replay(inputs);
      }
      Tensor[] out = new Tensor[1];
      float ms = tensors.context().time(() -> out[0] = recorded.replay(inputs));
      decisions.put(key, ms >= COMPARED_FROM_MS ? new EagerTrial(ms) : new KeepGraph());
      return out[0];
    }
    Tensor warmUp = body.apply(inputs);
    while (graphs.size() >= capacity) {
      evictEldest();
    }
    recording = true;
    CudaGraph graph;
    try {
      graph = CudaGraph.record(tensors, allocator, key, inputs, body);
    } finally {
      recording = false;
    }
    graphs.put(key, graph);
    recordings++;
    return warmUp;
  }

  /** Runs the body eagerly, timed, and keeps whichever of it and the graph's replay was faster. */
  private Tensor eagerTrial(
      GraphKey key, EagerTrial trial, List<Tensor> inputs, Function<List<Tensor>, Tensor> body) {
    Tensor[] out = new Tensor[1];
    float eagerMs = tensors.context().time(() -> out[0] = body.apply(inputs));
    boolean eager = eagerMs < trial.replayMs();
    decisions.put(key, eager ? new RunEagerly() : new KeepGraph());
    comparisons.put(
        key,
        String.format(
            "replay %.2f ms, eager %.2f ms: %s",
            trial.replayMs(), eagerMs, eager ? "runs eagerly" : "keeps its graph"));
    if (eager) {
      CudaGraph graph = graphs.remove(key);
      if (graph != null) {
        graph.close();
      }
    }
    return out[0];
  }

  /** Each key compared so far (replay against eager), and what was kept, one per line. */
  public String comparisons() {
    if (comparisons.isEmpty()) {
      return "none yet";
    }
    StringBuilder out = new StringBuilder();
    comparisons.forEach((k, v) -> out.append(k).append(": ").append(v).append('\n'));
    return out.toString().stripTrailing();
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
    decisions.clear();
    all.forEach(CudaGraph::close);
  }
}

package dev.stepweave.cuda.cudnn;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.stepweave.cuda.cudnn.CudnnConvolution.Key;
import dev.stepweave.cuda.cudnn.CudnnConvolution.Variant;
import dev.stepweave.cuda.cudnn.CudnnRuntime.Candidates;
import dev.stepweave.cuda.cudnn.CudnnRuntime.Plan;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * How a convolution's engine is chosen, without a GPU: the candidates are mode A's configurations
 * that finalize, in the heuristics' order, at most a limit of them and none over the workspace cap
 * ({@code FastestTest}: how the measurement picks among them).
 */
class CudnnPlanChoiceTest {
  private static final Key CONV3 = CudnnConvolutionGraphTest.CONV3;

  /** Mode A offers {@code configs} configurations; plans need {@code workspaces} in turn. */
  private static RecordingGraphApi heuristics(int configs, Long... workspaces) {
    RecordingGraphApi api = new RecordingGraphApi();
    api.getAnswer = () -> configs;
    api.int64Values.put(
        Cudnn.CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, new ArrayDeque<>(List.of(workspaces)));
    api.int64Values.put(
        Cudnn.CUDNN_ATTR_ENGINE_GLOBAL_INDEX, new ArrayDeque<>(List.of(11L, 12L, 13L, 14L)));
    return api;
  }

  private static long plansBuilt(RecordingGraphApi api) {
    return api.calls.stream()
        .filter(c -> c.equals("finish " + Cudnn.CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR))
        .count();
  }

  @Test
  void candidatesSkipPlansOverTheWorkspaceCapAndKeepTheHeuristicsOrder() {
    RecordingGraphApi api = heuristics(3, 0L, 2L << 30, 4096L);
    List<String> refusals = new ArrayList<>();
    try (CudnnDescriptors g = new CudnnDescriptors(api)) {
      CudnnDescriptor graph =
          CudnnConvolution.graph(g, RecordingGraphApi.HANDLE, CONV3, Variant.NCDHW_BIAS_FUSED);
      Candidates c =
          CudnnRuntime.candidates(
              g,
              graph,
              CudnnConvolution.TUNED_CONFIGS,
              CudnnConvolution.SMALLEST_WORKSPACE_CAP,
              Set.of(),
              refusals,
              "fused");
      assertEquals(List.of("11", "12"), c.plans().stream().map(Plan::engine).toList());
      assertEquals(List.of(0L, 4096L), c.plans().stream().map(Plan::workspaceBytes).toList());
      assertEquals(1, c.overWorkspace());
    }
    assertEquals(List.of(), refusals);
    assertEquals(3, plansBuilt(api));
  }

  @Test
  void candidatesStopAtTheLimit() {
    RecordingGraphApi api = heuristics(5, 0L, 0L, 0L, 0L, 0L);
    try (CudnnDescriptors g = new CudnnDescriptors(api)) {
      CudnnDescriptor graph =
          CudnnConvolution.graph(g, RecordingGraphApi.HANDLE, CONV3, Variant.NCDHW);
      Candidates c =
          CudnnRuntime.candidates(g, graph, 2, Long.MAX_VALUE, Set.of(), new ArrayList<>(), "x");
      assertEquals(2, c.plans().size());
    }
    assertEquals(2, plansBuilt(api));
  }

  @Test
  void whenEveryPlanIsOverTheCapTheShapeIsRefusedWithTheReason() {
    RecordingGraphApi api = heuristics(1, 2L << 30, 2L << 30);
    List<String> refusals = new ArrayList<>();
    try (CudnnDescriptors g = new CudnnDescriptors(api)) {
      CudnnDescriptor graph =
          CudnnConvolution.graph(g, RecordingGraphApi.HANDLE, CONV3, Variant.NCDHW);
      Candidates c =
          CudnnRuntime.candidates(
              g,
              graph,
              8,
              CudnnConvolution.SMALLEST_WORKSPACE_CAP,
              Set.of(),
              refusals,
              Variant.NCDHW.label);
      assertEquals(List.of(), c.plans());
      // Mode A's one configuration, then the fallback list's.
      assertEquals(2, c.overWorkspace());
    }
    assertEquals(List.of("NCDHW: every plan needs more than 1073741824 B of workspace"), refusals);
  }

  @Test
  void enginesWithLossyNumericsArePassedOver() {
    RecordingGraphApi api = heuristics(4, 0L, 0L);
    // Tensor cores only; reduced-precision reduction; Winograd; tensor cores and down-converted.
    api.numericalNotes.addAll(
        List.of(
            new int[] {0},
            new int[] {0, CudnnRuntime.NOTE_REDUCED_PRECISION_REDUCTION},
            new int[] {CudnnRuntime.NOTE_WINOGRAD},
            new int[] {0, 1}));
    try (CudnnDescriptors g = new CudnnDescriptors(api)) {
      CudnnDescriptor graph =
          CudnnConvolution.graph(g, RecordingGraphApi.HANDLE, CONV3, Variant.NCDHW);
      Candidates c =
          CudnnRuntime.candidates(
              g, graph, 8, Long.MAX_VALUE, CudnnRuntime.LOSSY_NOTES, new ArrayList<>(), "x");
      assertEquals(2, c.plans().size());
      assertEquals(2, c.lossy());
    }
    // Only the two kept configurations became plans.
    assertEquals(2, plansBuilt(api));
  }
}

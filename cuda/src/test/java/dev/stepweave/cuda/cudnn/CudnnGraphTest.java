package dev.stepweave.cuda.cudnn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.cuda.cudnn.CudnnAttention.Key;
import dev.stepweave.cuda.cudnn.CudnnAttention.Strides;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The cuDNN graphs and the descriptor layer without a GPU, through a recording {@link
 * CudnnGraphApi}. The unified graph is checked attribute by attribute against the API log of
 * PyTorch running one cuDNN SDPA of [1, 12, 256, 128] BF16 (cuDNN 9.19 via cudnn-frontend): same
 * descriptor types, attribute names, attribute types, element counts and values.
 */
class CudnnGraphTest {
  // The log's Q, K, V: [B, H, S, D] contiguous, i.e. our [B, L, H, D] view with these strides.
  private static final Strides LOGGED = new Strides(393216, 128, 32768, 1);

  @Test
  void theUnifiedGraphSetsWhatTheWorkingTraceSets() {
    RecordingGraphApi api = new RecordingGraphApi();
    Key key = new Key(1, 256, 256, 12, 128, 128, LOGGED, LOGGED, LOGGED, 16);
    CudnnDescriptor graph;
    try (CudnnDescriptors g = new CudnnDescriptors(api)) {
      graph = CudnnAttention.unifiedGraph(g, RecordingGraphApi.HANDLE, key);
      String io =
          "17 901/1=[9] 902/3=[1,12,256,128] 903/3=[393216,32768,128,1] 906/3=[%d] 900/3=[16] final";
      assertEquals(
          List.of(
              io.formatted(0),
              io.formatted(1),
              io.formatted(2),
              // The log's O was [B, H, S, D] contiguous; ours is [B, S, H, D].
              "17 901/1=[9] 902/3=[1,12,256,128] 903/3=[393216,128,1536,1] 906/3=[3] 900/3=[16] final",
              "17 901/1=[0] 902/3=[1,1,1,1] 903/3=[1,1,1,1] 906/3=[5] 900/3=[16] 908/2=[true] final",
              "41 2800/15=[T0] 2801/15=[T1] 2802/15=[T2] 2803/15=[T3] 2805/15=[T5] final",
              "15 801/15=[#5] 800/0=[H] final"),
          api.descriptors());
      assertEquals(api.descriptors().getLast(), api.of(graph));
    }
    assertEquals(7, api.calls.stream().filter(c -> c.startsWith("destroy")).count());
    assertEquals("destroy 15", api.calls.get(api.calls.size() - 7), "newest destroyed first");
  }

  @Test
  void theCompositeGraphIsMatmulScaleSoftmaxMatmulOverATransposedK() {
    RecordingGraphApi api = new RecordingGraphApi();
    Strides q = Strides.contiguous(5, 3, 8), k = Strides.contiguous(7, 3, 8);
    Strides v = Strides.contiguous(7, 3, 16);
    Key key = new Key(2, 5, 7, 3, 8, 16, q, k, v, 16);
    try (CudnnDescriptors g = new CudnnDescriptors(api)) {
      String graph = api.of(CudnnAttention.compositeGraph(g, RecordingGraphApi.HANDLE, key));
      List<String> all = api.descriptors();
      // Kᵀ: dims [B, H, D, Lk], strides of K's head dim and key dim swapped.
      assertTrue(
          all.contains(
              "17 901/1=[9] 902/3=[2,3,8,7] 903/3=[168,8,1,24] 906/3=[1] 900/3=[16] final"),
          all.toString());
      assertTrue(
          all.contains(
              "17 901/1=[9] 902/3=[2,3,5,8] 903/3=[120,8,24,1] 906/3=[0] 900/3=[16] final"));
      // Scores and row statistics are virtual F32; P, the second matmul's input, is BF16.
      assertTrue(
          all.contains(
              "17 901/1=[0] 902/3=[2,3,5,7] 903/3=[105,35,7,1] 906/3=[100] 900/3=[16] 907/2=[true] final"));
      assertTrue(
          all.contains(
              "17 901/1=[0] 902/3=[2,3,5,1] 903/3=[15,5,1,1] 906/3=[102] 900/3=[16] 907/2=[true] final"));
      assertTrue(
          all.contains(
              "17 901/1=[9] 902/3=[2,3,5,7] 903/3=[105,35,7,1] 906/3=[106] 900/3=[16] 907/2=[true] final"));
      // The operations, in order: matmul, mul, max, sub, exp, sum, div, matmul.
      List<String> ops = List.of(graph.replaceAll(".*801/15=\\[([^]]*)].*", "$1").split(","));
      assertEquals(8, ops.size(), graph);
      List<Integer> types =
          ops.stream()
              .map(o -> Integer.parseInt(all.get(Integer.parseInt(o.substring(1))).split(" ")[0]))
              .toList();
      assertEquals(List.of(19, 13, 22, 13, 13, 22, 13, 19), types);
      String exp = all.get(Integer.parseInt(ops.get(4).substring(1)));
      assertTrue(exp.matches("13 750/15=\\[#\\d+] 751/15=\\[T103] 753/15=\\[T104] final"), exp);
      String div = all.get(Integer.parseInt(ops.get(6).substring(1)));
      assertTrue(
          div.matches("13 750/15=\\[#\\d+] 751/15=\\[T104] 752/15=\\[T105] 753/15=\\[T106] final"),
          div);
      String bmm2 = all.get(Integer.parseInt(ops.get(7).substring(1)));
      assertTrue(
          bmm2.matches("19 1520/15=\\[T106] 1521/15=\\[T2] 1522/15=\\[T3] 1523/15=\\[#\\d+] final"),
          bmm2);
      assertTrue(all.contains("0 0/14=[13] 1/1=[0] final"), "an F32 EXP pointwise descriptor");
      assertTrue(
          all.contains("21 1601/1=[0] 1600/18=[3] final"), "an F32 MAX reduction descriptor");
    }
  }

  @Test
  void descriptorValuedAttributesAreReadByCountThenIntoCreatedDescriptors() {
    RecordingGraphApi api = new RecordingGraphApi();
    long[] answers = {3, 2};
    int[] call = {0};
    api.getAnswer = () -> answers[call[0]++];
    try (CudnnDescriptors g = new CudnnDescriptors(api)) {
      CudnnDescriptor heur = g.create(Cudnn.CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
      List<CudnnDescriptor> configs =
          heur.descriptors(
              Cudnn.CUDNN_ATTR_ENGINEHEUR_RESULTS, Cudnn.CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, g);
      assertEquals(2, configs.size(), "only as many as cuDNN filled");
      assertEquals(
          List.of("create 4", "get 202 0 NULL", "create 3", "create 3", "create 3", "get 202 3"),
          api.calls);
    }
    assertEquals(4, api.calls.stream().filter(c -> c.startsWith("destroy")).count());
  }

  @Test
  void attributesAreEncodedInTheirCLayouts() {
    RecordingGraphApi api = new RecordingGraphApi();
    try (CudnnDescriptors g = new CudnnDescriptors(api)) {
      CudnnDescriptor d =
          g.create(Cudnn.CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)
              .pointers(Cudnn.CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, 0x10, 0x7fff_0000_0000L)
              .int64s(Cudnn.CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, 3, 5)
              .bool(Cudnn.CUDNN_ATTR_TENSOR_IS_VIRTUAL, false)
              .enumValue(Cudnn.CUDNN_ATTR_ENGINEHEUR_MODE, Cudnn.CUDNN_TYPE_HEUR_MODE, 3)
              .cudnnHandle(Cudnn.CUDNN_ATTR_OPERATIONGRAPH_HANDLE, RecordingGraphApi.HANDLE)
              .finish();
      // The recorder checks each element count against the bytes handed over (8/8/1/4/8 each).
      assertEquals(
          "16 1001/6=[16,140733193388032] 1000/3=[3,5] 907/2=[false] 200/8=[3] 800/0=[H] final",
          api.of(d));
    }
  }

  @Test
  void theAlignmentIsThePointersLargestPowerOfTwoUpTo16() {
    assertEquals(16, CudnnRuntime.alignment(0x7f00_0000_1000L));
    assertEquals(16, CudnnRuntime.alignment(0x7f00_0000_1030L));
    assertEquals(8, CudnnRuntime.alignment(0x7f00_0000_1008L));
    assertEquals(2, CudnnRuntime.alignment(0x7f00_0000_100aL));
  }

  @Test
  void keysAreValuesAndTheOutputIsContiguous() {
    Strides s = Strides.contiguous(300, 3, 64);
    assertEquals(new Strides(57600, 192, 64, 1), s);
    assertEquals(
        List.of(57600L, 64L, 192L, 1L), java.util.Arrays.stream(s.bhld()).boxed().toList());
    Key a = new Key(1, 300, 300, 3, 64, 64, s, s, s, 16);
    assertEquals(a, new Key(1, 300, 300, 3, 64, 64, s, s, s, 16));
    assertEquals(a.hashCode(), new Key(1, 300, 300, 3, 64, 64, s, s, s, 16).hashCode());
    assertNotEquals(a, new Key(1, 300, 300, 3, 64, 64, s, s, s, 8));
    assertEquals(s, a.o());
  }
}

package dev.stepweave.cuda.cudnn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.cuda.cudnn.CudnnConvolution.Dims3;
import dev.stepweave.cuda.cudnn.CudnnConvolution.Key;
import dev.stepweave.cuda.cudnn.CudnnConvolution.Variant;
import dev.stepweave.tensor.DType;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The cuDNN convolution graphs without a GPU, through a recording {@link CudnnGraphApi}: descriptor
 * types, attribute names, types and values as cudnn-frontend's conv_fprop node sets them (compute
 * type, mode, spatial dims, pre/post paddings, dilations, filter strides; X, W, Y, the convolution
 * descriptor, then alpha and beta as C floats), the fused bias as a pointwise ADD from a virtual
 * F32 convolution output, and the packed strides of both layouts.
 */
class CudnnConvolutionGraphTest {
  // The VAE's 3×3×3 convolution at a small size: [1, 8, 5, 12, 10] → 16 channels, padding 1.
  static final Key CONV3 =
      new Key(
          1,
          8,
          new Dims3(5, 12, 10),
          16,
          new Dims3(3, 3, 3),
          new Dims3(1, 1, 1),
          new Dims3(1, 1, 1),
          true,
          16,
          DType.BF16,
          DType.BF16);

  @Test
  void theFusedGraphIsConvolutionIntoAVirtualF32TensorThenABiasAdd() {
    RecordingGraphApi api = new RecordingGraphApi();
    try (CudnnDescriptors g = new CudnnDescriptors(api)) {
      CudnnDescriptor graph =
          CudnnConvolution.graph(g, RecordingGraphApi.HANDLE, CONV3, Variant.NCDHW_BIAS_FUSED);
      assertEquals(
          List.of(
              "17 901/1=[9] 902/3=[1,8,5,12,10] 903/3=[4800,600,120,10,1] 906/3=[0] 900/3=[16] final",
              "17 901/1=[9] 902/3=[16,8,3,3,3] 903/3=[216,27,9,3,1] 906/3=[1] 900/3=[16] final",
              "17 901/1=[9] 902/3=[1,16,5,12,10] 903/3=[9600,600,120,10,1] 906/3=[2] 900/3=[16] final",
              // F32 compute, cross-correlation, 3 spatial dims, pre/post paddings, dilation 1,
              // strides.
              "1 100/1=[0] 101/7=[1] 106/3=[3] 105/3=[1,1,1] 104/3=[1,1,1] 102/3=[1,1,1] 103/3=[1,1,1] final",
              "17 901/1=[0] 902/3=[1,16,5,12,10] 903/3=[9600,600,120,10,1] 906/3=[4] 900/3=[16] 907/2=[true] final",
              "10 704/15=[T0] 703/15=[T1] 705/15=[T4] 702/15=[#3] 700/4=[1.0] 701/4=[0.0] final",
              "17 901/1=[0] 902/3=[1,16,1,1,1] 903/3=[16,1,1,1,1] 906/3=[3] 900/3=[16] final",
              "0 0/14=[0] 1/1=[0] final",
              "13 750/15=[#7] 751/15=[T4] 752/15=[T3] 753/15=[T2] final",
              "15 801/15=[#5,#8] 800/0=[H] final"),
          api.descriptors());
      assertEquals(api.descriptors().getLast(), api.of(graph));
    }
    assertEquals(10, api.calls.stream().filter(c -> c.startsWith("destroy")).count());
  }

  @Test
  void aMixedKeyHasBf16OperandsAndAnF32Result() {
    RecordingGraphApi api = new RecordingGraphApi();
    Key mixed =
        new Key(
            CONV3.n(),
            CONV3.c(),
            CONV3.input(),
            CONV3.k(),
            CONV3.kernel(),
            CONV3.stride(),
            CONV3.padding(),
            true,
            16,
            DType.BF16,
            DType.F32);
    try (CudnnDescriptors g = new CudnnDescriptors(api)) {
      CudnnConvolution.graph(g, RecordingGraphApi.HANDLE, mixed, Variant.NCDHW_BIAS_FUSED);
      List<String> all = api.descriptors();
      // X and W BF16 (9), Y F32 (0), the virtual convolution output F32 as before.
      assertTrue(all.get(0).startsWith("17 901/1=[9] 902/3=[1,8,5,12,10]"), all.get(0));
      assertTrue(all.get(1).startsWith("17 901/1=[9] 902/3=[16,8,3,3,3]"), all.get(1));
      assertTrue(all.get(2).startsWith("17 901/1=[0] 902/3=[1,16,5,12,10]"), all.get(2));
      assertTrue(all.get(4).startsWith("17 901/1=[0] 902/3=[1,16,5,12,10]"), all.get(4));
    }
    assertEquals(
        "x [1,8,5,12,10] w [16,8,3,3,3] stride [1, 1, 1] pad [1, 1, 1] +bias out F32",
        mixed.toString());
  }

  @Test
  void thePatchEmbeddingIsOneStridedOperationWritingYDirectly() {
    RecordingGraphApi api = new RecordingGraphApi();
    // The DiT's patch embedding: kernel (1, 2, 2), stride (1, 2, 2), no padding, at a small size.
    Key key =
        new Key(
            1,
            16,
            new Dims3(3, 8, 12),
            24,
            new Dims3(1, 2, 2),
            new Dims3(1, 2, 2),
            new Dims3(0, 0, 0),
            false,
            8,
            DType.BF16,
            DType.BF16);
    assertEquals(new Dims3(3, 4, 6), key.output());
    try (CudnnDescriptors g = new CudnnDescriptors(api)) {
      CudnnConvolution.graph(g, RecordingGraphApi.HANDLE, key, Variant.NCDHW);
      assertEquals(
          List.of(
              "17 901/1=[9] 902/3=[1,16,3,8,12] 903/3=[4608,288,96,12,1] 906/3=[0] 900/3=[8] final",
              "17 901/1=[9] 902/3=[24,16,1,2,2] 903/3=[64,4,4,2,1] 906/3=[1] 900/3=[16] final",
              "17 901/1=[9] 902/3=[1,24,3,4,6] 903/3=[1728,72,24,6,1] 906/3=[2] 900/3=[16] final",
              "1 100/1=[0] 101/7=[1] 106/3=[3] 105/3=[0,0,0] 104/3=[0,0,0] 102/3=[1,1,1] 103/3=[1,2,2] final",
              "10 704/15=[T0] 703/15=[T1] 705/15=[T2] 702/15=[#3] 700/4=[1.0] 701/4=[0.0] final",
              "15 801/15=[#4] 800/0=[H] final"),
          api.descriptors());
    }
  }

  @Test
  void channelsLastTensorsKeepNcdhwDimsWithChannelStrideOne() {
    RecordingGraphApi api = new RecordingGraphApi();
    try (CudnnDescriptors g = new CudnnDescriptors(api)) {
      CudnnConvolution.graph(g, RecordingGraphApi.HANDLE, CONV3, Variant.CHANNELS_LAST_BIAS_FUSED);
      List<String> all = api.descriptors();
      assertEquals(
          "17 901/1=[9] 902/3=[1,8,5,12,10] 903/3=[4800,1,960,80,8] 906/3=[0] 900/3=[16] final",
          all.get(0));
      assertEquals(
          "17 901/1=[9] 902/3=[16,8,3,3,3] 903/3=[216,1,72,24,8] 906/3=[1] 900/3=[16] final",
          all.get(1));
      assertEquals(
          "17 901/1=[9] 902/3=[1,16,5,12,10] 903/3=[9600,1,1920,160,16] 906/3=[2] 900/3=[16] final",
          all.get(2));
      assertEquals(
          "17 901/1=[0] 902/3=[1,16,1,1,1] 903/3=[16,1,16,16,16] 906/3=[3] 900/3=[16] final",
          all.get(6));
    }
  }

  @Test
  void packedStridesOfBothLayouts() {
    long[] dims = {2, 3, 4, 5, 6};
    assertArrayEquals(new long[] {360, 120, 30, 6, 1}, CudnnConvolution.packedStrides(dims, false));
    assertArrayEquals(new long[] {360, 1, 90, 18, 3}, CudnnConvolution.packedStrides(dims, true));
  }

  @Test
  void outputSizesFollowTheFloorFormulaWithSymmetricPadding() {
    Key odd =
        new Key(
            1,
            3,
            new Dims3(7, 9, 11),
            5,
            new Dims3(3, 3, 3),
            new Dims3(2, 1, 2),
            new Dims3(1, 0, 1),
            true,
            2,
            DType.BF16,
            DType.BF16);
    // (7 + 2 − 3) / 2 + 1 = 4, (9 − 3) / 1 + 1 = 7, (11 + 2 − 3) / 2 + 1 = 6.
    assertEquals(new Dims3(4, 7, 6), odd.output());
    assertEquals(
        odd,
        new Key(
            1,
            3,
            new Dims3(7, 9, 11),
            5,
            new Dims3(3, 3, 3),
            new Dims3(2, 1, 2),
            new Dims3(1, 0, 1),
            true,
            2,
            DType.BF16,
            DType.BF16));
  }

  @Test
  void anEmptyHeuristicsAnswerIsARefusalNotAPlan() {
    RecordingGraphApi api = new RecordingGraphApi();
    List<String> refusals = new ArrayList<>();
    try (CudnnDescriptors g = new CudnnDescriptors(api)) {
      CudnnDescriptor graph =
          CudnnConvolution.graph(g, RecordingGraphApi.HANDLE, CONV3, Variant.NCDHW);
      CudnnRuntime.Candidates none =
          CudnnRuntime.candidates(
              g, graph, 8, Long.MAX_VALUE, Set.of(), refusals, Variant.NCDHW.label);
      assertEquals(List.of(), none.plans());
    }
    assertEquals(List.of("NCDHW: the heuristics offered no engine configuration"), refusals);
    // Mode A, then the fallback list: each asked for its count of configurations.
    assertEquals(2, api.calls.stream().filter(c -> c.equals("get 202 0 NULL")).count());
  }
}

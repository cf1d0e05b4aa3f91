package dev.stepweave.cuda.ops;

import dev.stepweave.cuda.blas.Gemm;
import dev.stepweave.cuda.cudnn.CudnnRuntime;
import dev.stepweave.cuda.memory.DeviceTensors;
import dev.stepweave.tensor.Precision;

/**
 * The compute ops of one backend, by family (argument checks, then kernels, GEMMs and cuDNN),
 * sharing its device tensors, GEMM and cuDNN runtime.
 */
public final class CudaOps implements AutoCloseable {
  /** The most bytes one op's scratch may take (an im2col matrix, a chunk of attention scores). */
  public static final long SCRATCH_BUDGET_BYTES = 512L << 20;

  private final CudnnRuntime cudnnRuntime;
  private final ElementwiseOps elementwise;
  private final MatrixOps matrix;
  private final NormOps norms;
  private final AttentionOps attention;
  private final ConvolutionOps convolution;
  private final MovementOps movement;
  private final LowRankOps lowRank;
  private final MultiTensorOps multiTensor;

  public CudaOps(DeviceTensors tensors, Gemm gemm, Precision precision) {
    Operands operands = new Operands(tensors, precision);
    this.cudnnRuntime = new CudnnRuntime(tensors.context());
    this.elementwise = new ElementwiseOps(operands);
    this.matrix = new MatrixOps(operands, gemm, elementwise);
    this.norms = new NormOps(operands);
    this.attention = new AttentionOps(operands, cudnnRuntime, matrix, norms, elementwise);
    this.convolution = new ConvolutionOps(operands, gemm, cudnnRuntime);
    this.movement = new MovementOps(operands);
    this.lowRank = new LowRankOps(operands, gemm, matrix, elementwise);
    this.multiTensor = new MultiTensorOps(operands);
  }

  public ElementwiseOps elementwise() {
    return elementwise;
  }

  public MatrixOps matrix() {
    return matrix;
  }

  public NormOps norms() {
    return norms;
  }

  public AttentionOps attention() {
    return attention;
  }

  public ConvolutionOps convolution() {
    return convolution;
  }

  public MovementOps movement() {
    return movement;
  }

  public LowRankOps lowRank() {
    return lowRank;
  }

  public MultiTensorOps multiTensor() {
    return multiTensor;
  }

  @Override
  public void close() {
    attention.close();
    convolution.close();
    cudnnRuntime.close();
  }
}

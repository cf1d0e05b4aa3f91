package dev.stepweave.tensor.rng;

import dev.stepweave.tensor.Tensor;

/**
 * torch's CPU random generator ({@code torch.Generator().manual_seed(seed)}) and its {@code
 * torch.randn} for float32, reproducing torch's numbers exactly.
 *
 * <p>torch draws normals two ways. Fewer than 16 values: one at a time from a double-precision
 * Box–Muller pair built from two 53-bit uniforms, the pair's second value cached in the generator
 * for the next draw. 16 or more: float uniforms from 24 bits each for the whole tensor, then
 * transformed in blocks of 16 by {@link AvxBoxMuller}; a ragged tail is redone by drawing 16 fresh
 * uniforms for the last 16 positions. The block transform is the one torch's x86 builds run (its
 * AVX2 kernel, which produced the reference recordings); torch on CPUs without it uses libm there
 * and can differ in the last bit.
 *
 * <p>Mutable and not thread-safe: one generator belongs to one request. {@link #state()} and {@link
 * #restore} checkpoint it exactly.
 */
public final class TorchGenerator {
  private static final long MASK_53 = (1L << 53) - 1;
  private static final double TWO_POW_MINUS_53 = 0x1.0p-53;
  private static final int MASK_24 = (1 << 24) - 1;
  private static final float TWO_POW_MINUS_24 = 0x1.0p-24f;

  private long initialSeed;
  private Mt19937 engine;
  private Double cachedNormal;

  private TorchGenerator(long initialSeed, Mt19937 engine, Double cachedNormal) {
    this.initialSeed = initialSeed;
    this.engine = engine;
    this.cachedNormal = cachedNormal;
  }

  /** A generator in the state of {@code torch.Generator().manual_seed(seed)}. */
  public static TorchGenerator seeded(long seed) {
    return new TorchGenerator(seed, Mt19937.seeded(seed), null);
  }

  public static TorchGenerator fromState(TorchGeneratorState state) {
    TorchGenerator g = seeded(state.initialSeed());
    g.restore(state);
    return g;
  }

  /** The seed this generator was last seeded with. */
  public long initialSeed() {
    return initialSeed;
  }

  public TorchGeneratorState state() {
    return new TorchGeneratorState(initialSeed, engine.words(), engine.position(), cachedNormal);
  }

  /** Puts this generator back into {@code state}; later draws repeat those that followed it. */
  public void restore(TorchGeneratorState state) {
    initialSeed = state.initialSeed();
    engine = Mt19937.resume(state.mtWords(), state.mtPosition());
    cachedNormal = state.cachedNormal();
  }

  /** {@code torch.randn(shape, generator=this)}: a CPU F32 tensor of standard normals. */
  public Tensor randn(int... shape) {
    long n = Tensor.numel(shape);
    if (n > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("randn of " + n + " values is too large");
    }
    return Tensor.of(normals((int) n), shape);
  }

  /** {@code n} standard normals in torch's order for a contiguous float32 tensor of n values. */
  public float[] normals(int n) {
    return n >= AvxBoxMuller.BLOCK ? blockNormals(n) : scalarNormals(n);
  }

  private float[] scalarNormals(int n) {
    float[] out = new float[n];
    for (int i = 0; i < n; i++) {
      out[i] = (float) nextDoubleNormal();
    }
    return out;
  }

  private double nextDoubleNormal() {
    if (cachedNormal != null) {
      double v = cachedNormal;
      cachedNormal = null;
      return v;
    }
    double u1 = nextDoubleUniform();
    double u2 = nextDoubleUniform();
    double radius = StrictMath.sqrt(-2.0 * StrictMath.log1p(-u2));
    double theta = 2.0 * Math.PI * u1;
    cachedNormal = radius * StrictMath.sin(theta);
    return radius * StrictMath.cos(theta);
  }

  private float[] blockNormals(int n) {
    float[] out = new float[n];
    for (int i = 0; i < n; i++) {
      out[i] = nextFloatUniform();
    }
    int whole = n - n % AvxBoxMuller.BLOCK;
    for (int i = 0; i < whole; i += AvxBoxMuller.BLOCK) {
      AvxBoxMuller.transform(out, i);
    }
    if (whole != n) {
      int tail = n - AvxBoxMuller.BLOCK;
      for (int i = tail; i < n; i++) {
        out[i] = nextFloatUniform();
      }
      AvxBoxMuller.transform(out, tail);
    }
    return out;
  }

  /** A uniform in [0, 1) from the low 24 bits of one 32-bit draw. */
  private float nextFloatUniform() {
    return (engine.nextInt() & MASK_24) * TWO_POW_MINUS_24;
  }

  /** A uniform in [0, 1) from the low 53 bits of a 64-bit draw (first 32-bit draw high). */
  private double nextDoubleUniform() {
    long hi = Integer.toUnsignedLong(engine.nextInt());
    long lo = Integer.toUnsignedLong(engine.nextInt());
    return ((hi << 32 | lo) & MASK_53) * TWO_POW_MINUS_53;
  }
}

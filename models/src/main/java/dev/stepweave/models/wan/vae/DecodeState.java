package dev.stepweave.models.wan.vae;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.Backend.StepMemory;
import dev.stepweave.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * A latent decode in progress. Every latent frame (the decoder takes one at a time) is decoded in
 * two parts: the global part over the whole frame, whose causal cache carries across frames, then
 * the local part tile by tile, each tile with its own causal cache carrying its region across
 * frames. One step decodes one tile of one frame (starting with the frame's global part); an
 * untiled decode has one tile per frame.
 *
 * <p>Every step runs in the state's {@link StepMemory}: what the step made and what the state
 * dropped (replaced cache frames, a finished frame's tiles and features) dies with the step. A
 * finished decode keeps only its frames.
 */
public final class DecodeState {
  private final Tensor latents;
  private final TileGrid grid;
  private final CausalCache globalCache;
  private final CausalCache[] tileCaches;
  private final StepMemory memory;
  private final List<Tensor> decoded = new ArrayList<>();
  private final List<Tensor> frameTiles = new ArrayList<>();
  private Tensor features;
  private int nextFrame;

  DecodeState(
      Tensor latents,
      TileGrid grid,
      CausalCache globalCache,
      CausalCache[] tileCaches,
      StepMemory memory) {
    if (tileCaches.length != grid.size()) {
      throw new IllegalArgumentException(
          tileCaches.length + " tile caches for a grid of " + grid.size() + " tiles");
    }
    this.latents = latents;
    this.grid = grid;
    this.globalCache = globalCache;
    this.tileCaches = tileCaches.clone();
    this.memory = memory;
    var release = CausalCache.releasingUnlessHeld(memory, this::held);
    globalCache.releaseWith(release);
    for (CausalCache c : this.tileCaches) {
      c.releaseWith(release);
    }
  }

  /** Every tensor this state holds: what a release during its step must not free. */
  private Stream<Tensor> held() {
    Stream<Tensor> caches =
        Stream.concat(Stream.of(globalCache), Arrays.stream(tileCaches))
            .flatMap(c -> c.remembered().stream());
    Stream<Tensor> own =
        Stream.of(
                Stream.of(latents),
                decoded.stream(),
                frameTiles.stream(),
                Stream.ofNullable(features))
            .flatMap(t -> t);
    return Stream.concat(own, caches);
  }

  public Tensor latents() {
    return latents;
  }

  /**
   * A copy to step instead of this state (tensors shared; lists and caches copied), so a step
   * leaves this state's lists and counters as they were. The copy is the decode now and this state
   * is spent: they share this decode's step memory, and a step of the copy frees the cache frames
   * it replaces as it goes (on a device backend; {@link CausalCache#releasingUnlessHeld}) and, once
   * it has returned, whatever else only this state held.
   */
  DecodeState fork() {
    CausalCache[] tiles = new CausalCache[tileCaches.length];
    for (int i = 0; i < tiles.length; i++) {
      tiles[i] = tileCaches[i].copy();
    }
    DecodeState c = new DecodeState(latents, grid, globalCache.copy(), tiles, memory);
    c.decoded.addAll(decoded);
    c.frameTiles.addAll(frameTiles);
    c.features = features;
    c.nextFrame = nextFrame;
    return c;
  }

  /** The decoded latent frames so far, unclamped, each {@code [B, C, t, H, W]}. */
  public List<Tensor> decoded() {
    return List.copyOf(decoded);
  }

  /**
   * The video the latest step completed: the whole frame when it finished one, otherwise its tile.
   * Valid until the next step (which may release a tile once its frame is assembled).
   */
  public Tensor latestOutput() {
    if (!frameTiles.isEmpty()) {
      return frameTiles.getLast();
    }
    if (decoded.isEmpty()) {
      throw new IllegalStateException("no decode step has run yet");
    }
    return decoded.getLast();
  }

  public int nextFrame() {
    return nextFrame;
  }

  /** Tiles per latent frame (1 when untiled). */
  public int tilesPerFrame() {
    return grid.size();
  }

  public int stepsDone() {
    return nextFrame * grid.size() + frameTiles.size();
  }

  public int totalSteps() {
    return latents.dim(2) * grid.size();
  }

  public boolean isDone() {
    return nextFrame == latents.dim(2);
  }

  /**
   * Gives back the device memory this decode holds, its frames and caches: for a decode whose video
   * has been taken ({@code WanVae.finish} and downloaded or copied). The state must not be used
   * after; without this, a device backend gets it back when the collector finds the state.
   */
  public void release() {
    memory.step(() -> {}, List::of);
  }

  /** Runs one step's {@code body} in this decode's memory (see {@link Backend#stepMemory}). */
  void step(Runnable body) {
    memory.step(body, () -> tensors().values());
  }

  Tensor nextLatentFrame() {
    return latents.slice(2, nextFrame, nextFrame + 1);
  }

  CausalCache globalCache() {
    return globalCache;
  }

  /** The global part's output for the current frame, or null before its first tile. */
  Tensor features() {
    return features;
  }

  void beginFrame(Tensor frameFeatures) {
    features = frameFeatures;
  }

  DecodeTile nextTile() {
    return grid.tiles().get(frameTiles.size());
  }

  CausalCache nextTileCache() {
    return tileCaches[frameTiles.size()];
  }

  /** Records the next tile's video; the frame's last tile completes the frame. */
  void acceptTile(Tensor video, Backend backend) {
    frameTiles.add(video);
    if (frameTiles.size() == grid.size()) {
      decoded.add(grid.assemble(backend, frameTiles));
      frameTiles.clear();
      features = null;
      nextFrame++;
      if (isDone()) {
        // No frame follows: the remembered frames are dead.
        globalCache.clear();
        for (CausalCache c : tileCaches) {
          c.clear();
        }
      }
    }
  }

  /**
   * The state's tensors by name (decoded frames, the current frame's finished tiles and global
   * features, the causal caches; not the latents, which the caller keeps), on the decoder's device.
   */
  public Map<String, Tensor> tensors() {
    Map<String, Tensor> out = new LinkedHashMap<>();
    for (int i = 0; i < decoded.size(); i++) {
      out.put("decoded." + i, decoded.get(i));
    }
    for (int i = 0; i < frameTiles.size(); i++) {
      out.put("tile." + i, frameTiles.get(i));
    }
    if (features != null) {
      out.put("features", features);
    }
    globalCache.tensors().forEach((k, v) -> out.put("cache.global." + k, v));
    for (int i = 0; i < tileCaches.length; i++) {
      String prefix = "cache.tile." + i + ".";
      tileCaches[i].tensors().forEach((k, v) -> out.put(prefix + k, v));
    }
    return out;
  }

  /** The state's counters and cache flags as strings. */
  public Map<String, String> scalars() {
    Map<String, String> out = new LinkedHashMap<>();
    out.put("next_frame", Integer.toString(nextFrame));
    out.put("next_tile", Integer.toString(frameTiles.size()));
    out.put("tiles", Integer.toString(grid.size()));
    out.put("cache_flags.global", globalCache.flags());
    for (int i = 0; i < tileCaches.length; i++) {
      out.put("cache_flags.tile." + i, tileCaches[i].flags());
    }
    return out;
  }

  /**
   * Rebuilds a state from {@link #tensors} and {@link #scalars} over the same latents and the same
   * tile grid.
   */
  static DecodeState restore(
      Tensor latents,
      TileGrid grid,
      int cacheSlots,
      Map<String, Tensor> tensors,
      Map<String, String> scalars,
      StepMemory memory) {
    int tiles = count(scalars, "tiles", 1, Integer.MAX_VALUE);
    if (tiles != grid.size()) {
      throw new IllegalArgumentException(
          "decode state has " + tiles + " tiles per frame, this tiling gives " + grid.size());
    }
    int frame = count(scalars, "next_frame", 0, latents.dim(2));
    int tile = count(scalars, "next_tile", 0, frame == latents.dim(2) ? 0 : tiles - 1);
    CausalCache[] tileCaches = new CausalCache[tiles];
    for (int i = 0; i < tiles; i++) {
      tileCaches[i] = cache(cacheSlots, "tile." + i, tensors, scalars);
    }
    DecodeState s =
        new DecodeState(
            latents, grid, cache(cacheSlots, "global", tensors, scalars), tileCaches, memory);
    for (int i = 0; i < frame; i++) {
      s.decoded.add(required(tensors, "decoded." + i));
    }
    s.nextFrame = frame;
    for (int i = 0; i < tile; i++) {
      s.frameTiles.add(required(tensors, "tile." + i));
    }
    s.features = tile > 0 ? required(tensors, "features") : null;
    return s;
  }

  private static CausalCache cache(
      int slots, String name, Map<String, Tensor> tensors, Map<String, String> scalars) {
    String flags = scalars.get("cache_flags." + name);
    if (flags == null) {
      throw new IllegalArgumentException("decode state lacks cache_flags." + name);
    }
    String prefix = "cache." + name + ".";
    Map<String, Tensor> own = new LinkedHashMap<>();
    tensors.forEach(
        (k, v) -> {
          if (k.startsWith(prefix)) {
            own.put(k.substring(prefix.length()), v);
          }
        });
    return CausalCache.restore(slots, own, flags);
  }

  private static int count(Map<String, String> scalars, String key, int min, int max) {
    String value = scalars.get(key);
    if (value == null) {
      throw new IllegalArgumentException("decode state lacks " + key);
    }
    int n;
    try {
      n = Integer.parseInt(value);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("decode state " + key + " is not an integer: " + value);
    }
    if (n < min || n > max) {
      throw new IllegalArgumentException(
          "decode state " + key + " " + n + " outside " + min + ".." + max);
    }
    return n;
  }

  private static Tensor required(Map<String, Tensor> tensors, String key) {
    Tensor t = tensors.get(key);
    if (t == null) {
      throw new IllegalArgumentException("decode state lacks " + key);
    }
    return t;
  }
}

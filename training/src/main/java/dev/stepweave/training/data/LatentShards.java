package dev.stepweave.training.data;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.SafetensorsFile;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A shards folder: {@value ShardIndex#FILE}, {@value #UNCOND_FILE} (the empty prompt's embedding,
 * the unconditional branch of guidance), and {@code shard-NNNNN.safetensors} files holding, for
 * their k-th sample, {@code k.latents} and {@code k.prompt_embeds} (F32), with the samples' ids and
 * captions as JSON arrays in the metadata keys {@code ids} and {@code captions}.
 *
 * <p>Reading holds one shard mapped at a time; samples are copied out, so they outlive it.
 */
public final class LatentShards implements AutoCloseable {
  static final String UNCOND_FILE = "uncond.safetensors";
  static final String NEGATIVE_PROMPT_EMBEDS = "negative_prompt_embeds";

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final TypeReference<List<String>> STRINGS = new TypeReference<>() {};

  private final Path dir;
  private final ShardIndex index;
  private final Tensor negativePromptEmbeds;
  private int openShard = -1;
  private SafetensorsFile open;
  private List<String> openIds;
  private List<String> openCaptions;

  private LatentShards(Path dir, ShardIndex index, Tensor negativePromptEmbeds) {
    this.dir = dir;
    this.index = index;
    this.negativePromptEmbeds = negativePromptEmbeds;
  }

  /** Opens a folder {@link Writer} wrote. */
  public static LatentShards open(Path dir) {
    ShardIndex index = ShardIndex.read(dir);
    try (SafetensorsFile uncond = SafetensorsFile.open(dir.resolve(UNCOND_FILE))) {
      return new LatentShards(dir, index, copy(uncond.load(NEGATIVE_PROMPT_EMBEDS)));
    }
  }

  public ShardIndex index() {
    return index;
  }

  public int size() {
    return index.samples();
  }

  /** The empty prompt's embedding {@code [L, D]}. */
  public Tensor negativePromptEmbeds() {
    return negativePromptEmbeds;
  }

  /** Sample {@code i} of {@link #size()}, in the order the dataset listed them. */
  public LatentSample get(int i) {
    if (i < 0 || i >= size()) {
      throw new IndexOutOfBoundsException("sample " + i + " of " + size());
    }
    int shard = 0;
    int k = i;
    while (k >= index.shards().get(shard).samples()) {
      k -= index.shards().get(shard).samples();
      shard++;
    }
    select(shard);
    return new LatentSample(
        openIds.get(k),
        openCaptions.get(k),
        copy(open.load(k + ".latents")),
        copy(open.load(k + ".prompt_embeds")));
  }

  private void select(int shard) {
    if (shard == openShard) {
      return;
    }
    close();
    ShardIndex.Shard s = index.shards().get(shard);
    open = SafetensorsFile.open(dir.resolve(s.file()));
    try {
      openIds = JSON.readValue(open.metadata().get("ids"), STRINGS);
      openCaptions = JSON.readValue(open.metadata().get("captions"), STRINGS);
    } catch (IOException | IllegalArgumentException e) {
      throw new IllegalArgumentException(open.file() + ": unreadable ids or captions metadata");
    }
    if (openIds.size() != s.samples() || openCaptions.size() != s.samples()) {
      throw new IllegalArgumentException(
          open.file() + ": holds " + openIds.size() + " samples, the index says " + s.samples());
    }
    openShard = shard;
  }

  @Override
  public void close() {
    if (open != null) {
      open.close();
      open = null;
      openShard = -1;
    }
  }

  private static Tensor copy(Tensor t) {
    return Tensor.of(t.toFloatArray(), t.shape());
  }

  /** Writes a shards folder sample by sample, {@code perShard} samples to a file. */
  public static final class Writer {
    private final Path dir;
    private final int perShard;
    private final List<ShardIndex.Shard> shards = new ArrayList<>();
    private final Map<String, Tensor> pending = new LinkedHashMap<>();
    private final List<String> ids = new ArrayList<>();
    private final List<String> captions = new ArrayList<>();

    /**
     * @param dir an existing, empty directory
     */
    public Writer(Path dir, int perShard) {
      if (perShard < 1) {
        throw new IllegalArgumentException("samples per shard must be 1 or more, got " + perShard);
      }
      this.dir = dir;
      this.perShard = perShard;
    }

    public void add(LatentSample s) {
      int k = ids.size();
      pending.put(k + ".latents", copy(s.latents()));
      pending.put(k + ".prompt_embeds", copy(s.promptEmbeds()));
      ids.add(s.id());
      captions.add(s.caption());
      if (ids.size() == perShard) {
        flush();
      }
    }

    /** Writes the last shard, the unconditional embedding and the index. */
    public void finish(
        String modelId,
        long weightsVersion,
        String datasetSha256,
        int maxSequenceLength,
        Tensor negativePromptEmbeds)
        throws IOException {
      flush();
      dev.stepweave.tensor.io.Safetensors.write(
          dir.resolve(UNCOND_FILE),
          Map.of(NEGATIVE_PROMPT_EMBEDS, copy(negativePromptEmbeds)),
          Map.of("prompt", ""));
      new ShardIndex(modelId, weightsVersion, datasetSha256, maxSequenceLength, shards).write(dir);
    }

    private void flush() {
      if (ids.isEmpty()) {
        return;
      }
      String name = String.format(java.util.Locale.ROOT, "shard-%05d.safetensors", shards.size());
      try {
        dev.stepweave.tensor.io.Safetensors.write(
            dir.resolve(name),
            pending,
            Map.of(
                "ids",
                JSON.writeValueAsString(ids),
                "captions",
                JSON.writeValueAsString(captions)));
      } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
        throw new IllegalStateException(e);
      }
      shards.add(new ShardIndex.Shard(name, ids.size()));
      pending.clear();
      ids.clear();
      captions.clear();
    }
  }
}

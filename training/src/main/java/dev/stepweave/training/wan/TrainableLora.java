package dev.stepweave.training.wan;

import dev.stepweave.core.cache.ContentHash;
import dev.stepweave.core.extend.RegisteredAdapter;
import dev.stepweave.core.extend.ResolvedAdapter;
import dev.stepweave.models.wan.lora.WanAdapters;
import dev.stepweave.models.wan.transformer.AdapterRows;
import dev.stepweave.models.wan.transformer.LayerAdapter;
import dev.stepweave.models.wan.transformer.LayerUpdate;
import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.DType;
import dev.stepweave.tensor.Device;
import dev.stepweave.tensor.Tensor;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A LoRA adapter to train on a {@link TrainableTransformer}: read by the serving adapter loader
 * ({@link WanAdapters}, every format it reads) onto the training backend, applied through the
 * serving LoRA path ({@link AdapterRows}, {@code Backend.linearLowRank}), its low-rank factors the
 * only trainable tensors — the base weights stay frozen and take no gradient. The factors are named
 * as diffusers/PEFT names them: {@code <layer>.lora_A.weight} (down, {@code [rank, in]}) and {@code
 * <layer>.lora_B.weight} (up, {@code [out, rank]}).
 */
public final class TrainableLora implements AutoCloseable {
  private final WanAdapters.Held held;
  private final float strength;
  private final Backend backend;
  private final Map<String, Tensor> masters;

  private TrainableLora(WanAdapters.Held held, float strength, Backend backend) {
    this.held = held;
    this.strength = strength;
    this.backend = backend;
    Map<String, Tensor> factors = factors();
    if (backend.device().kind() == Device.Kind.CPU) {
      this.masters = factors;
    } else {
      // F32 masters beside the factors, which the device may hold in BF16.
      Map<String, Tensor> copies = new LinkedHashMap<>();
      factors.forEach(
          (name, f) -> {
            Tensor master = backend.zeros(DType.F32, f.shape());
            backend.copyInto(master, f);
            copies.put(name, master);
          });
      this.masters = copies;
    }
  }

  /**
   * Loads {@code file} for {@code model} at {@code strength}.
   *
   * @throws dev.stepweave.core.extend.InvalidAdapterException naming the file and key when it does
   *     not fit the transformer
   */
  public static TrainableLora load(TrainableTransformer model, Path file, float strength) {
    WanAdapters adapters =
        new WanAdapters(
            "training",
            model.backend(),
            model.model()::adaptableLayers,
            WanAdapters.DEFAULT_BUDGET_BYTES);
    try {
      RegisteredAdapter registered =
          new RegisteredAdapter(
              file.getFileName().toString(),
              file,
              ContentHash.ofFile(file),
              Files.size(file),
              adapters.inspect(file));
      return new TrainableLora(
          adapters.acquire(new ResolvedAdapter(registered, strength)), strength, model.backend());
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read adapter " + file, e);
    }
  }

  /**
   * Every low-rank factor by its PEFT name, in layer order, as the optimiser updates it: F32
   * tensors where the model computes (on the CPU the factors themselves; on a device F32 masters
   * beside them, which {@link #pushed} copies into the factors after a step).
   */
  public Map<String, Tensor> parameters() {
    return masters;
  }

  /** After an optimiser step updated {@link #parameters} in place: the device's factors follow. */
  public void pushed() {
    if (backend.device().kind() != Device.Kind.CPU) {
      Map<String, Tensor> onDevice = factors();
      masters.forEach((name, m) -> backend.copyInto(onDevice.get(name), m));
    }
  }

  /** The factors the model computes with, by their PEFT names: what a step differentiates. */
  public Map<String, Tensor> factors() {
    Map<String, Tensor> out = new LinkedHashMap<>();
    for (Map.Entry<String, LayerUpdate> e : adapter().layers().entrySet()) {
      out.put(e.getKey() + ".lora_A.weight", e.getValue().down());
      out.put(e.getKey() + ".lora_B.weight", e.getValue().up());
      if (e.getValue().bias() != null) {
        out.put(e.getKey() + ".lora_B.bias", e.getValue().bias());
      }
    }
    return out;
  }

  /** The adapter on every one of {@code batch} rows, at its strength. */
  public AdapterRows rows(int batch) {
    return AdapterRows.of(
        Collections.nCopies(batch, List.of(new AdapterRows.Applied(adapter(), strength))));
  }

  private LayerAdapter adapter() {
    return held.adapter();
  }

  @Override
  public void close() {
    held.close();
  }
}
